"""Several gateway processes on one machine: `omni gateway --workers N`.

One gateway process tops out near ~320 audio-s/s of CPU (docs/perf-notes.md, "Service host overhead") and the gateway
is stateless, so N worker processes each run a whole gateway (own event loop, own gRPC channels to the backends) on
the same HTTP and gRPC ports. Each worker binds its own listening sockets with SO_REUSEPORT, so the kernel spreads
new connections over the workers' own accept queues.

The parent only supervises. It reserves the ports (so port 0 becomes one port for all workers, and a port taken by
another program fails at once), points prometheus_client's multiprocess mode at a fresh directory (any worker's
/metrics then shows the sum over all of them), spawns the workers (fresh interpreters), and forwards SIGTERM/SIGINT:
each worker drains gracefully; a second signal kills them. A worker that exits on its own is reported, the others
are stopped and the parent exits 1 (fail fast: the pod or `omni serve` restarts the whole gateway; a gateway that
quietly runs on fewer workers would hide the fault). Workers also get SIGTERM if the parent dies (Linux).
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("omni.gateway")

WORKER_HEADER = b"x-omni-worker"  # which worker process (pid) answered; only with several workers
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEPORT, not yet listening (uvicorn listens on it).

    The protocol is named (IPPROTO_TCP, not 0): asyncio sets TCP_NODELAY only on connections whose socket says TCP,
    and accepted sockets inherit the listener's. With proto 0 Nagle's algorithm held each response's small first
    write until the client's delayed ACK, ~40 ms later (time to first audio 70 ms at the client against 23 ms in the
    gateway's log, docs/benchmarks.md run 32)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class WorkerHeader:
    """ASGI middleware: every response says which worker process served it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.value = str(os.getpid()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (WORKER_HEADER, self.value)]
            await send(message)

        await self.app(scope, receive, send_with_header)


Serve = Callable[[Any, int], Coroutine[Any, Any, None]]  # serve(settings, worker_index): one whole gateway


def run_workers(serve: Serve, settings: Any) -> int:
    """Run `settings.workers` gateway processes until SIGTERM/SIGINT; the exit code (0: all stopped cleanly).
    `serve` must be a module-level function (it is pickled by reference into the spawned workers)."""
    reserved: list[socket.socket] = []
    try:
        reserved.append(reuseport_socket(settings.host, settings.port))
        settings = dataclasses.replace(settings, port=reserved[-1].getsockname()[1])
        if settings.grpc_port >= 0:
            reserved.append(reuseport_socket(settings.host, settings.grpc_port))
            settings = dataclasses.replace(settings, grpc_port=reserved[-1].getsockname()[1])
    except OSError as e:
        for sock in reserved:
            sock.close()
        log.error("cannot bind %s: %s", settings.host, e)
        return 1
    metrics_dir = tempfile.mkdtemp(prefix="omni-gateway-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir  # inherited by the workers
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker, args=(serve, settings, i, os.getpid()), name=f"omni-gateway-worker-{i}")
        for i in range(settings.workers)
    ]
    signals = 0

    def forward(signum: int = 0, frame: object = None) -> None:
        """First signal: every started worker drains (SIGTERM); any later one: kill them."""
        nonlocal signals
        signals += 1
        for worker in workers:
            if worker.pid is not None and worker.exitcode is None:
                os.kill(worker.pid, signal.SIGTERM if signals == 1 else signal.SIGKILL)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    failed = False
    try:
        for worker in workers:
            worker.start()
        if signals:  # a signal came while they started: the later ones missed it
            signals -= 1
            forward()
        log.info(
            "gateway: %d workers (pids %s) on HTTP port %d, gRPC port %d",
            len(workers), ",".join(str(w.pid) for w in workers), settings.port, settings.grpc_port,
        )  # fmt: skip
        running = list(workers)
        while running:
            ready = multiprocessing.connection.wait([w.sentinel for w in running])
            for worker in [w for w in running if w.sentinel in ready]:
                worker.join()
                running.remove(worker)
                if not signals:
                    log.error(
                        "gateway worker %s (pid %d) exited with code %s", worker.name, worker.pid, worker.exitcode
                    )
                    failed = True
                    forward()  # stop the others
    finally:
        for worker in workers:
            if worker.pid is not None and worker.exitcode is None:
                worker.kill()
                worker.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sock in reserved:
            sock.close()
        shutil.rmtree(metrics_dir, ignore_errors=True)
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    return 1 if failed or any(w.exitcode != 0 for w in workers) else 0


def _worker(serve: Serve, settings: Any, index: int, parent_pid: int) -> None:
    """One worker process: a whole gateway that stops when the parent says so, or when the parent is gone."""
    from omni.services.common.logging import setup_logging

    setup_logging(settings.log_level)
    os.setpgrp()  # terminal Ctrl-C reaches the parent only; it forwards one SIGTERM (a second SIGINT forces exit)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent_pid:
        raise SystemExit(f"gateway worker {index}: the parent {parent_pid} is already gone")
    asyncio.run(serve(settings, index))
