"""`omni gateway --workers N` (through `omni serve --gateway-workers 2`): real processes on loopback, tiny Base
checkpoint. Requests are spread over the workers (the `x-omni-worker` header names the pid that answered), /metrics
sums over workers, the gRPC Speech port is shared too, SIGTERM drains every worker and frees the ports, a crashed
worker stops the gateway with an error, and workers follow a killed parent."""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from omni.client import SpeechClient
from tests.processes import SERVE_READY, Lines, interrupt_and_wait, popen

SAMPLES_PER_FRAME = 1920


def worker_pids_answering(url: str, count: int, tries: int = 400) -> set[int]:
    """Probe /live on fresh connections until `count` different workers have answered (all started)."""
    seen: set[int] = set()
    for _ in range(tries):
        try:
            seen.add(int(httpx.get(url + "/live", timeout=5).headers["x-omni-worker"]))
        except httpx.TransportError:
            pass
        if len(seen) == count:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"only workers {seen} answered")


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # exited, not yet reaped by whoever adopted it


def wait_gone(pids: set[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(gone(pid) for pid in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if not gone(p)]}"
        time.sleep(0.1)


def port_is_free(port: int) -> bool:
    """Nothing listens on the port (a plain listener, without SO_REUSEPORT, can take it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT connections are fine
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


class Stack:
    def __init__(self, process: subprocess.Popen, out: Lines, model_dir: Path, work: Path) -> None:
        self.process, self.out, self.model_dir, self.work = process, out, model_dir, work
        text = out.text()
        self.http = re.search(r"HTTP API: (http://\S+)/v1", text).group(1)
        self.grpc = re.search(r"gRPC Speech service:\s+(\S+)", text).group(1)
        self.gateway_pid = int(re.search(r"gateway:\s+pid (\d+), 2 worker processes", text).group(1))
        self.talker = re.search(r"talker service:\s+(\S+)", text).group(1)
        self.codec = re.search(r"codec service:\s+(\S+)", text).group(1)
        self.workers = worker_pids_answering(self.http, 2)
        hidden = json.loads((model_dir / "config.json").read_text())["talker_config"]["hidden_size"]
        self.body = {"input": "Hi.", "speaker_embedding": [0.1] * hidden, "response_format": "pcm"}  # no encoder


@pytest.fixture(scope="module")
def stack(tiny_model_dir, tmp_path_factory):
    model_dir = tiny_model_dir("base")
    work = tmp_path_factory.mktemp("serve_workers")
    process, out = popen(
        "serve", "--model", str(model_dir), "--port", "0", "--grpc-port", "0", "--work-dir", str(work),
        "--max-streams", "8", "--gateway-workers", "2",
    )  # fmt: skip
    try:
        out.wait_for(SERVE_READY)
        yield Stack(process, out, model_dir, work)
    finally:
        interrupt_and_wait(process)


def test_workers_are_children_of_the_gateway_and_share_its_ports(stack):
    for pid in stack.workers:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert ppid == stack.gateway_pid
    assert not port_is_free(int(stack.http.rsplit(":", 1)[1]))


def test_requests_are_spread_over_workers_and_metrics_sum_over_them(stack):
    def one(seed: int) -> tuple[int, int, int]:
        response = httpx.post(  # a new connection each time: the kernel picks a worker per connection
            stack.http + "/v1/audio/speech", json={**stack.body, "max_new_tokens": 4, "seed": seed}, timeout=120
        )
        return response.status_code, int(response.headers["x-omni-worker"]), len(response.content)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(24)))
    assert all(status == 200 and size == 3 * SAMPLES_PER_FRAME * 2 for status, _, size in results), results
    served = {pid for _, pid, _ in results}
    assert served == stack.workers  # 2**-23 odds that one worker got every connection

    # Whichever worker a scrape lands on, it reports all 24 requests (each worker alone served fewer).
    scraped_by: set[int] = set()
    for _ in range(200):
        response = httpx.get(stack.http + "/metrics", timeout=10)
        text = response.text
        assert 'omni_gateway_requests_total{endpoint="speech",outcome="ok"} 24.0' in text
        assert "omni_gateway_requests_in_flight 0.0" in text
        audio = re.search(r"omni_gateway_audio_seconds_total\{model=\"[^\"]+\"} (\S+)", text)
        assert float(audio.group(1)) == pytest.approx(24 * 3 * 0.08)
        count = re.search(r'omni_gateway_time_to_first_audio_seconds_count\{model="[^"]+",stream="none"} (\S+)', text)
        assert float(count.group(1)) == 24
        scraped_by.add(int(response.headers["x-omni-worker"]))
        if scraped_by == stack.workers:
            break
    assert scraped_by == stack.workers


def test_grpc_speech_is_served_on_the_shared_port(stack):
    buf = io.BytesIO()
    sf.write(buf, 0.3 * np.sin(np.arange(16000) * 0.1).astype(np.float32), 16000, format="WAV")
    for _ in range(2):
        with SpeechClient(stack.grpc) as client:  # a new connection each time
            audio, rate = client.synthesize(
                "Hi.", ref_audio=buf.getvalue(), x_vector_only_mode=True, max_new_tokens=4, ignore_eos=True
            )
        assert rate == 24000 and audio.size == 3 * SAMPLES_PER_FRAME


def test_an_idle_keep_alive_connection_outlives_uvicorns_default_timeout(stack):
    # uvicorn closes idle connections after 5 s by default, racing clients whose pools keep them as long (httpx: 5 s):
    # a request sent on a connection the server is closing fails with no response. The gateway keeps them 75 s.
    host, port = stack.http.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", "/live")
        assert connection.getresponse().read() is not None
        local = connection.sock.getsockname()
        time.sleep(6.0)
        connection.request("GET", "/live")
        response = connection.getresponse()
        response.read()
        assert response.status == 200 and connection.sock.getsockname() == local  # the same connection, reused
    finally:
        connection.close()


def test_a_crashed_worker_stops_the_gateway_and_workers_follow_a_killed_parent(stack):
    """Two standalone gateways (2 workers each) over the stack's talker and codec; each is hit as soon as its workers
    exist (the supervision does not depend on how far they got)."""
    common = ["--model", str(stack.model_dir), "--talkers", stack.talker, "--codecs", stack.codec]
    common += ["--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--workers", "2"]
    gateways = [popen("gateway", *common) for _ in range(2)]
    try:
        started = []
        for _, out in gateways:
            match = out.wait_for(r"gateway: 2 workers \(pids (\d+),(\d+)\) on HTTP port (\d+), gRPC port (\d+)")
            started.append(([int(match.group(1)), int(match.group(2))], int(match.group(3)), int(match.group(4))))
        (crashed, left), orphans = started[0][0], started[1][0]
        os.kill(crashed, signal.SIGKILL)  # gateway 0: a worker dies
        os.kill(gateways[1][0].pid, signal.SIGKILL)  # gateway 1: the parent dies
        assert gateways[0][0].wait(60) == 1
        assert f"(pid {crashed}) exited with code -9" in gateways[0][1].text()
        gateways[1][0].wait(60)
        wait_gone({left, *orphans})
        for _, http_port, grpc_port in started:
            assert port_is_free(http_port) and port_is_free(grpc_port)
    finally:
        for process, _ in gateways:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_zz_sigterm_drains_every_worker_and_frees_the_ports(stack):
    """Runs last: it stops the gateway (omni serve then reports it and exits 1)."""
    frames = 40
    body = {**stack.body, "stream_format": "audio", "ignore_eos": True, "max_new_tokens": frames + 1}
    with httpx.stream("POST", stack.http + "/v1/audio/speech", json=body, timeout=120) as response:
        chunks = response.iter_bytes()
        received = len(next(chunks))
        os.kill(stack.gateway_pid, signal.SIGTERM)
        received += sum(len(chunk) for chunk in chunks)
    assert received == frames * SAMPLES_PER_FRAME * 2  # the stream in flight finished
    assert stack.process.wait(60) == 1
    assert "omni gateway exited with code 0" in stack.out.text()
    assert "Waiting for connections to close" in (stack.work / "gateway.log").read_text()  # it was still streaming
    wait_gone(stack.workers)
    for port in (int(stack.http.rsplit(":", 1)[1]), int(stack.grpc.rsplit(":", 1)[1])):
        assert port_is_free(port)


def test_chart_gateway_workers_value_reaches_the_gateway_args():
    from tests.test_chart import container, omni_parser, render

    assert not any(a.startswith("--workers") for a in container(render(), "gateway")["args"])  # 1: as before
    args = container(render(gateway={"workers": 4}), "gateway")["args"]
    assert int(omni_parser().parse_args(args).workers) == 4
    assert container(render("values-h200.yaml"), "gateway")["args"].count("--workers=4") == 1
    with pytest.raises(Exception, match="gateway.workers must be at least 1"):
        render(gateway={"workers": 0})


def test_worker_sockets_give_their_connections_tcp_nodelay():
    """asyncio turns Nagle off only on connections whose socket says TCP; a worker's listener must, or each response's
    small first write waits for the client's delayed ACK (~40 ms of time to first audio)."""
    import asyncio

    from omni.services.gateway.workers import reuseport_socket

    async def scenario() -> int:
        listener = reuseport_socket("127.0.0.1", 0)
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_connect(reader, writer) -> None:
            sock = writer.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            nodelay = await asyncio.wait_for(accepted, 5)
            writer.close()
            return nodelay

    assert asyncio.run(scenario()) != 0


def test_serve_waits_until_every_gateway_worker_is_ready(tmp_path):
    """Each worker watches the backends on its own: serve must not say ready while one worker still answers 503 (a
    request sent to it would fail with "no codec replica is available", docs/benchmarks.md run 40). Two real HTTP
    servers share one port as the workers do; the second turns ready only when told."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from omni.services.gateway.workers import reuseport_socket

    from omni.commands.serve import Stack as ServeStack
    from omni.commands.serve import wait_http_ready

    class Readiness(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server.hits += 1
            self.send_response(200 if self.server.ready.is_set() else 503)
            self.send_header("x-omni-worker", self.server.name)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    port = 0
    servers = []
    for name in ("101", "102"):
        server = HTTPServer(("127.0.0.1", port), Readiness, bind_and_activate=False)
        server.socket.close()
        server.socket = reuseport_socket("127.0.0.1", port)
        server.socket.listen(64)
        port = server.socket.getsockname()[1]
        server.name, server.hits, server.ready = name, 0, threading.Event()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    servers[0].ready.set()
    url = f"http://127.0.0.1:{port}/ready"
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            wait_http_ready(ServeStack(tmp_path), url, time.monotonic() + 60, workers=2)
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    try:
        waiter = threading.Thread(target=wait)
        waiter.start()
        deadline = time.monotonic() + 30
        while min(s.hits for s in servers) < 3:  # both workers were asked, the first answered 200, and more than once
            assert time.monotonic() < deadline and waiter.is_alive(), (errors, [s.hits for s in servers])
            time.sleep(0.05)
        assert waiter.is_alive()  # still waiting: the second worker is not ready
        servers[1].ready.set()
        waiter.join(30)
        assert not waiter.is_alive() and not errors, errors
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
