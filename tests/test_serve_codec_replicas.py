"""`omni serve --codec-replicas N`: N codec processes behind one gateway, and the gateway's spreading of codec streams
over replicas. The stack test runs the real `omni serve` (tiny CustomVoice checkpoint, every service a subprocess on
loopback); the spreading test polls two real in-process codec services with a `GrpcBackend`."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import pytest
from omni.services.common.logging import request_records

from omni.cli import build_parser
from omni.commands import serve
from omni.commands.serve import codec_metrics_ports
from omni.proto import codec_pb2, codec_pb2_grpc, talker_pb2
from tests.processes import SERVE_READY, interrupt_and_wait, popen

READY_TIMEOUT_S = 600
REQUESTS = 6


def test_codec_replicas_must_be_at_least_one(capsys):
    for bad, why in (("0", "must be at least 1, got 0"), ("two", "expected a whole number")):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["serve", "--codec-replicas", bad])
        assert exited.value.code == 2
        assert f"argument --codec-replicas: {why}" in capsys.readouterr().err
    assert build_parser().parse_args(["serve"]).codec_replicas == 1


def test_codec_metrics_ports_never_collide():
    assert codec_metrics_ports(None, 1) == [None]  # one replica: the codec's own setting, as before
    assert codec_metrics_ports("-1", 3) == [None, None, None]  # metrics off stays off
    first, *others = codec_metrics_ports("9555", 3)
    assert first == 9555 and len(set(others) | {first}) == 3  # replica 0 keeps the port a caller scrapes
    unset = codec_metrics_ports(None, 3)
    assert all(isinstance(p, int) and p > 0 for p in unset) and len(set(unset)) == 3
    assert codec_metrics_ports("0", 1)[0] > 0
    with pytest.raises(ValueError, match="OMNI_CODEC_METRICS_PORT='x' is not a port number"):
        codec_metrics_ports("x", 2)


def test_free_ports_are_drawn_below_the_ephemeral_range_and_bindable(monkeypatch):
    # A port handed out is bound later by another process; meanwhile a port-0 bind or an outgoing connection can be
    # given any port of the kernel's ephemeral range, so ours come from below it (a test's port was taken once in CI).
    low, _ = serve.ephemeral_ports()
    ports = serve.free_ports(20)
    assert len(set(ports)) == 20 and all(serve.PORT_FLOOR <= p < low for p in ports), (ports, low)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: nothing of ours holds it
    monkeypatch.setattr(serve, "HANDED_OUT", set())  # forget them, so the draws below may repeat them
    picks = iter(ports[:2])  # the draw hits a port in use first: it is skipped
    monkeypatch.setattr(serve.random, "randrange", lambda start, stop: next(picks))
    with socket.socket() as held:
        held.bind(("127.0.0.1", ports[0]))
        held.listen()
        assert serve.free_ports(1) == [ports[1]]
    # Too little room below the range (a machine configured so): the kernel's own choice.
    monkeypatch.setattr(serve, "ephemeral_ports", lambda: (serve.PORT_FLOOR + 10, 60999))
    fallback = serve.free_ports(3)
    assert len(set(fallback)) == 3 and all(p > 0 for p in fallback)


def test_a_port_handed_out_is_never_handed_out_again(monkeypatch):
    # A port handed out stays free until its new owner binds it, and a later draw may repeat it: `omni serve` once
    # gave its codec the gateway's gRPC port (the gateway bound it first, the codec failed to start).
    monkeypatch.setattr(serve, "HANDED_OUT", set())
    first, second, third = serve.free_ports(3)
    monkeypatch.setattr(serve, "HANDED_OUT", set())
    picks = iter([first, first, second, first, second, third])
    monkeypatch.setattr(serve.random, "randrange", lambda start, stop: next(picks))
    assert serve.free_port() == first
    assert serve.free_port() == second  # the repeat of `first` was skipped though its port is free again
    assert serve.free_ports(1) == [third]
    assert serve.HANDED_OUT == {first, second, third}


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in the metrics of port {port}"
    return float(match.group(1))


def codec_capacity(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = codec_pb2_grpc.CodecServiceStub(channel)
        return stub.GetLoad(codec_pb2.GetLoadRequest(), timeout=5).load.capacity


def decoded_request_ids(log_text: str) -> list[str]:
    """The request ids of the streams a codec finished, from its per-request `decode` log lines."""
    return [r["request_id"] for r in request_records(log_text, "decode") if r.get("outcome") == "ok"]


@pytest.mark.parametrize(
    "replicas", [["--codec-replicas", "2"], ["--codec-devices", "cpu, cpu"]], ids=["count", "devices"]
)
def test_serve_with_two_codec_replicas_spreads_concurrent_requests(tiny_model_dir, tmp_path, replicas):
    model_dir = tiny_model_dir("custom_voice")
    work = tmp_path / "serve"
    env = dict(os.environ)
    env.pop("OMNI_CODEC_METRICS_PORT", None)  # unset: serve gives each replica its own metrics port
    process, output = popen(
        "serve", "--model", str(model_dir), "--port", "0", "--grpc-port", "0", "--work-dir", str(work),
        "--max-streams", "4", "--codec-max-streams", "5", *replicas, env=env,
    )  # fmt: skip
    try:
        output.wait_for(SERVE_READY, READY_TIMEOUT_S)
        text = output.text()
        http = re.search(r"HTTP API: (http://\S+)/v1", text).group(1)
        # bench_stack's two regexes: one pid per backend process, and `codec` is still replica 0.
        services = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) service:\s+\S+ \(pid (\d+)\)", text)}
        assert set(services) == {"refenc", "codec", "codec1", "talker"}, text
        assert len(re.findall(r"service:\s+\S+ \(pid (\d+)\)", text)) == 4
        codecs = {
            m.group(1): (m.group(2), int(m.group(3)))
            for m in re.finditer(r"(codec\d*) service:\s+(\S+) \(pid \d+\).*, metrics port (\d+)", text)
        }
        assert set(codecs) == {"codec", "codec1"} and codecs["codec"][1] != codecs["codec1"][1], text
        assert len(re.findall(r"codec\d* service:\s+\S+ \(pid \d+\) on cpu,", text)) == 2, text
        # 5 codec streams over 2 replicas: 3 each (ceil), so the stack holds at least the 5 of one codec.
        assert [codec_capacity(address) for address, _ in codecs.values()] == [3, 3]

        def one(seed: int) -> tuple[int, int, str]:
            body = {"input": f"Replica {seed}.", "voice": "vivian", "response_format": "pcm"}
            response = httpx.post(
                http + "/v1/audio/speech", json={**body, "max_new_tokens": 4, "seed": seed}, timeout=120
            )
            return response.status_code, len(response.content), response.headers.get("x-request-id", "")

        with ThreadPoolExecutor(REQUESTS) as pool:
            results = list(pool.map(one, range(REQUESTS)))
        assert all(status == 200 and size > 0 for status, size, _ in results), results

        # Every request was decoded by exactly one replica, and each replica decoded some of them. A codec logs its
        # request line as its stream closes, which can come just after the client has the last byte: wait for them.
        sent = sorted(rid for _, _, rid in results)
        deadline = time.monotonic() + 30
        while True:
            decoded = {
                "codec": decoded_request_ids((work / "codec.log").read_text()),
                "codec1": decoded_request_ids((work / "codec-1.log").read_text()),
            }
            if len(decoded["codec"] + decoded["codec1"]) >= len(sent) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert sorted(decoded["codec"] + decoded["codec1"]) == sent, decoded
        assert all(decoded.values()), decoded
        for name, (_, metrics_port) in codecs.items():
            ok = metric(metrics_port, 'omni_codec_streams_total{outcome="ok"}')
            assert ok == len(decoded[name]) and metric(metrics_port, "omni_codec_frames_decoded_total") > 0
    finally:
        code = interrupt_and_wait(process)
    assert code == 0, output.text()


def test_gateway_spreads_a_burst_of_codec_opens_and_keeps_opens_during_a_poll_counted(tiny_model_dir):
    """Opens between two load polls go to the replica with fewer streams picked since the last poll; a stream opened
    while a poll's GetLoad is answered is not in that load, so it stays counted as picked."""
    from omni.services.codec.config import CodecConfig
    from omni.services.codec.service import build_codec_service
    from omni.services.gateway.grpc_backend import GrpcBackend, PreparedRequest

    model_dir = tiny_model_dir("base")
    prepared = PreparedRequest(talker_pb2.GenerateRequest())

    async def scenario() -> None:
        common = {"model": str(model_dir), "host": "127.0.0.1", "port": 0, "grace_s": 0.1, "max_streams": 8}
        codecs = [build_codec_service(CodecConfig(**common)) for _ in range(2)]
        ports = [await service.start() for service, _ in codecs]
        a, b = (f"127.0.0.1:{port}" for port in ports)
        backend = GrpcBackend(model_dir, [], [a, b], [], poll_s=3600)  # polled only when the test says so
        pool = backend.codecs
        calls = []
        try:
            await backend.start()
            assert [r.address for r in pool.ranked()] == [a, b]

            opened = await asyncio.gather(*(backend._open_codec(f"burst-{i}", prepared) for i in range(4)))
            calls += [call for call, _ in opened]
            assert sorted(replica.address for _, replica in opened) == sorted([a, a, b, b])  # not all four on `a`
            await pool.refresh()
            assert [(r.load.active_streams, r.picked) for r in (pool.replicas[a], pool.replicas[b])] == [(2, 0), (2, 0)]

            # A stream opened on `a` after its GetLoad was answered, before the poll is done with it.
            check = pool.check

            async def check_then_open(replica) -> None:
                await check(replica)
                if replica.address == a:
                    call, picked = await backend._open_codec("during-poll", prepared)
                    calls.append(call)
                    assert picked.address == a  # a tie, and `a` ranks first

            pool.check = check_then_open
            await pool.refresh()
            replica_a = pool.replicas[a]
            assert (replica_a.load.active_streams, replica_a.picked) == (2, 1)
            assert [r.address for r in pool.ranked()] == [b, a]  # the next open goes to `b`
            pool.check = check
            await pool.refresh()
            assert (replica_a.load.active_streams, replica_a.picked) == (3, 0)
        finally:
            for call in calls:
                call.cancel()
            await backend.close()
            for service, engine in codecs:
                await service.stop(0.1)
                await engine.stop()

    asyncio.run(scenario())
