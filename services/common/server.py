"""A grpc.aio server runner shared by every omni service.

Health checking (grpc.health.v1) reports NOT_SERVING until the service's warm-up finished, SERVING after it,
and NOT_SERVING again from the moment shutdown begins, so load balancers drain the replica before in-flight
streams are cut. Reflection lists the service's APIs. SIGTERM/SIGINT start a graceful shutdown: stop
admitting, give in-flight RPCs `grace_s` seconds, then cancel what is left.
"""

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

log = logging.getLogger("omni.server")

# Streams can be long and chunks small; keepalives detect dead peers so their slots are freed.
DEFAULT_OPTIONS = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    # gRPC sets SO_REUSEPORT unless told not to: a second server on a port already bound (or handed port 0 while
    # another server holds the same one) then shares it silently and answers calls meant for the first. Each service
    # binds its port alone; the gateway's workers share theirs on purpose (SHARED_PORT_OPTIONS).
    ("grpc.so_reuseport", 0),
)
SHARED_PORT_OPTIONS = (*(o for o in DEFAULT_OPTIONS if o[0] != "grpc.so_reuseport"), ("grpc.so_reuseport", 1))


def set_switch_interval(ms: float) -> None:
    """Python's thread switch interval for this process (ServiceConfig.switch_interval_ms; 0 leaves it as it is)."""
    if ms < 0:
        raise ValueError(f"switch_interval_ms must be >= 0, got {ms}")
    if ms > 0:
        sys.setswitchinterval(ms / 1000.0)
        log.info("thread switch interval %.2f ms", ms)


class GrpcService:
    """One grpc.aio server with health and reflection.

    Usage: `add(add_XServicer_to_server, servicer, "pkg.XService")` for each API, `await start()`,
    warm up, `await set_serving()`, and finally `await stop()` (or `await run(warmup)` for all of it
    including signal handling).
    """

    def __init__(self, name: str, address: str, grace_s: float = 10.0, options=DEFAULT_OPTIONS) -> None:
        self.name = name
        self.address = address
        self.grace_s = grace_s
        self.server = grpc.aio.server(options=list(options))
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.service_names: list[str] = []
        self.port: int | None = None
        self.serving = False
        self._stop_requested = asyncio.Event()
        self._shutdown_hooks: list[Callable[[], Awaitable[None]]] = []

    def add(self, add_to_server: Callable, servicer: object, full_name: str) -> None:
        """Register an API servicer under its full service name (e.g. "omni.codec.v1.CodecService")."""
        add_to_server(servicer, self.server)
        self.service_names.append(full_name)

    def on_shutdown(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run `hook` when shutdown begins (after health turns NOT_SERVING, before the grace period)."""
        self._shutdown_hooks.append(hook)

    async def start(self) -> int:
        """Bind and start serving RPCs (health says NOT_SERVING); returns the bound port."""
        names = [*self.service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
        reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], self.server)
        for service in ["", *self.service_names]:
            await self.health.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
        self.port = self.server.add_insecure_port(self.address)
        if self.port == 0:
            raise RuntimeError(f"{self.name}: cannot bind {self.address}")
        await self.server.start()
        log.info("%s listening on %s (port %d)", self.name, self.address, self.port)
        return self.port

    async def set_serving(self) -> None:
        """Warm-up done: health turns SERVING for the server and every registered API."""
        for service in ["", *self.service_names]:
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        self.serving = True
        log.info("%s serving", self.name)

    def request_stop(self) -> None:
        """Ask `run` to shut down (what SIGTERM/SIGINT do)."""
        self._stop_requested.set()

    async def stop(self, grace_s: float | None = None) -> None:
        """Graceful shutdown: NOT_SERVING, shutdown hooks, then up to grace_s for in-flight RPCs."""
        grace = self.grace_s if grace_s is None else grace_s
        self.serving = False
        await self.health.enter_graceful_shutdown()
        log.info("%s shutting down (grace %.1f s)", self.name, grace)
        for hook in self._shutdown_hooks:
            await hook()
        await self.server.stop(grace)
        log.info("%s stopped", self.name)

    async def run(self, warmup: Callable[[], Awaitable[None]] | None = None) -> None:
        """Start, warm up, serve until SIGTERM/SIGINT (or request_stop), then stop gracefully."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            await self.start()
            if warmup is not None:
                await warmup()
            await self.set_serving()
            await self._stop_requested.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            await self.stop()
