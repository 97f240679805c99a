"""services/common: config precedence and inheritance, packing, and a real grpc.aio server over loopback."""

import asyncio
import dataclasses
import json
import logging
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from omni.services.common import packing
from omni.services.common.config import (
    ConfigError,
    ServiceConfig,
    add_config_flags,
    load_config,
    load_profile,
    option,
)
from omni.services.common.logging import JsonFormatter, log_request, request_records
from omni.services.common.metrics import MetricsServer
from omni.services.common.server import SHARED_PORT_OPTIONS, GrpcService, set_switch_interval

from omni.proto import common_pb2, talker_pb2, talker_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- config


@dataclasses.dataclass
class DemoConfig(ServiceConfig):
    max_streams: int = option(4, "slots")
    max_wait_ms: float = option(0.0, "coalescing window")
    ramp: list[int] = option([1, 4], "chunk ramp")
    strict: bool = option(False, "a flag")
    name: str | None = option(None, "optional name")


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def profiles(tmp_path):
    write(tmp_path / "root.yaml", "demo: {max_streams: 8, max_wait_ms: 2.5, port: 7000}\nother: {x: 1}\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "mid.yaml", "base_config: ../root.yaml\ndemo: {max_streams: 16, ramp: [1, 2, 3]}\n")
    return write(tmp_path / "sub" / "leaf.yaml", "base_config: mid.yaml\ndemo: {strict: true}\n")


def test_config_defaults_without_sources():
    cfg = load_config(DemoConfig, "demo", flags={}, env={})
    assert (cfg.max_streams, cfg.ramp, cfg.strict, cfg.name, cfg.grace_s) == (4, [1, 4], False, None, 10.0)


def test_profile_inheritance_merges_key_by_key(profiles):
    merged = load_profile(profiles)
    assert "base_config" not in merged and merged["other"] == {"x": 1}
    assert merged["demo"] == {"max_streams": 16, "max_wait_ms": 2.5, "port": 7000, "ramp": [1, 2, 3], "strict": True}


def test_precedence_flags_over_env_over_profile_over_defaults(profiles):
    env = {"OMNI_DEMO_MAX_STREAMS": "32", "OMNI_DEMO_MAX_WAIT_MS": "5", "OMNI_DEMO_RAMP": "2,8", "OMNI_OTHER_PORT": "1"}
    cfg = load_config(DemoConfig, "demo", flags={"max_streams": "64", "profile": str(profiles)}, env=env)
    assert cfg.max_streams == 64  # flag beats env and profile
    assert cfg.max_wait_ms == 5.0 and cfg.ramp == [2, 8]  # env beats profile
    assert cfg.port == 7000 and cfg.strict is True  # profile beats defaults
    assert cfg.grace_s == 10.0 and cfg.name is None  # defaults


def test_profile_from_env_and_argparse_flags(profiles):
    import argparse

    parser = argparse.ArgumentParser()
    add_config_flags(parser, DemoConfig)
    args = parser.parse_args(["--max-wait-ms", "1.5", "--name", "x"])
    cfg = load_config(DemoConfig, "demo", flags=args, env={"OMNI_DEMO_PROFILE": str(profiles)})
    assert (cfg.max_wait_ms, cfg.name, cfg.max_streams) == (1.5, "x", 16)


@pytest.mark.parametrize("service", ["talker", "codec", "refenc", "gateway"])
def test_each_service_command_prints_its_help(service):
    """`omni <service> --help` lists every setting with its help: a `%` in a help text (e.g. "+2.5%") is argparse's
    format character, and before it was escaped the talker's and codec's help stopped with a TypeError."""
    done = subprocess.run([sys.executable, "-m", "omni.cli", service, "--help"], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--profile" in done.stdout and "(default:" in done.stdout


def test_config_errors_name_their_source(tmp_path, profiles):
    with pytest.raises(ConfigError, match="OMNI_DEMO_MAX_STREAMS"):
        load_config(DemoConfig, "demo", env={"OMNI_DEMO_MAX_STREAMS": "many"})
    with pytest.raises(ConfigError, match="--strict"):
        load_config(DemoConfig, "demo", flags={"strict": "maybe"}, env={})
    bad = write(tmp_path / "bad.yaml", "base_config: sub/leaf.yaml\ndemo: {max_stream: 3}\n")
    with pytest.raises(ConfigError, match="unknown demo settings \\['max_stream'\\]"):
        load_config(DemoConfig, "demo", profile=bad, env={})
    write(tmp_path / "a.yaml", "base_config: b.yaml\n")
    write(tmp_path / "b.yaml", "base_config: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_profile(tmp_path / "a.yaml")
    with pytest.raises(ConfigError, match="not found"):
        load_profile("no-such-profile")


def test_capture_buckets_always_hold_the_largest_batch():
    from omni.services.common.config import capture_buckets

    default = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    # 512 streams (as the H200 profile's codec): batches of 257..512 get a graph too, not an eager step.
    assert capture_buckets(default, 512) == [*default, 512]
    assert capture_buckets(default, 64) == [1, 2, 4, 8, 16, 32, 64]
    assert capture_buckets([16, 4, 4, 300], 100) == [4, 16, 100]


def test_switch_interval_setting_from_env_reaches_the_interpreter():
    config = load_config(DemoConfig, "demo", env={"OMNI_DEMO_SWITCH_INTERVAL_MS": "0.5"})
    assert config.switch_interval_ms == 0.5
    before = sys.getswitchinterval()
    try:
        set_switch_interval(config.switch_interval_ms)
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        set_switch_interval(0)  # 0 leaves it as it is
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        with pytest.raises(ValueError, match="switch_interval_ms"):
            set_switch_interval(-1)
    finally:
        sys.setswitchinterval(before)


def test_repo_deploy_profiles_inherit_base():
    h200 = load_profile("qwen3-tts-1.7b-h200")
    cpu = load_profile(ROOT / "deploy" / "qwen3-tts-0.6b-cpu.yaml")
    assert h200["codec"]["max_streams"] == 512 and h200["codec"]["port"] == 50052
    assert cpu["codec"]["max_streams"] == 8 and cpu["talker"]["port"] == 50051
    assert h200["codec"]["device"] == "cuda" and cpu["codec"]["device"] == "cpu"


@pytest.mark.parametrize("profile", ["qwen3-tts-1.7b-h200", "qwen3-tts-0.6b-cpu"])
def test_repo_deploy_profiles_load_into_every_service_config(profile):
    """Every setting a shipped profile names is one its service knows, of the right type (load_config refuses the
    rest), so a typo in a profile fails here and not at a pod's start."""
    from omni.services.codec.config import CodecConfig
    from omni.services.refenc.config import RefencConfig
    from omni.services.talker.config import TalkerConfig

    configs = {
        name: load_config(cls, name, env={}, profile=profile)
        for name, cls in [("talker", TalkerConfig), ("codec", CodecConfig), ("refenc", RefencConfig)]
    }
    for config in configs.values():
        config.validate()
    if profile.endswith("h200"):
        assert configs["codec"].max_tick_rows == 128 and configs["talker"].busy_initial_chunk_frames == 4


# ---------------------------------------------------------------- packing


def test_codes_round_trip_and_validation():
    codes = np.random.default_rng(0).integers(0, 2048, size=(7, 16))
    data = packing.pack_codes(codes)
    assert len(data) == 7 * 16 * 2 and data[:2] == int(codes[0, 0]).to_bytes(2, "little")
    assert np.array_equal(packing.unpack_codes(data, 7, 16, 2048), codes)
    with pytest.raises(packing.PackingError, match="expected 224"):
        packing.unpack_codes(data[:-2], 7, 16)
    with pytest.raises(packing.PackingError, match="shape \\[frames, 16\\]"):
        packing.pack_codes(codes[:, :15])
    with pytest.raises(packing.PackingError, match="in \\[0, 2048\\)"):
        packing.unpack_codes(packing.pack_codes(np.full((1, 16), 2048)), 1, 16, 2048)
    with pytest.raises(packing.PackingError, match="in \\[0, 32767\\]"):
        packing.pack_codes(np.full((1, 16), -1))
    with pytest.raises(packing.PackingError, match="integers"):
        packing.pack_codes(np.zeros((1, 16), dtype=np.float32))


def test_vectors_and_pcm_round_trip():
    vector = np.linspace(-3, 3, 24, dtype=np.float32)
    assert np.array_equal(packing.unpack_vector(packing.pack_vector(vector), 24), vector)
    with pytest.raises(packing.PackingError, match="expected 25"):
        packing.unpack_vector(packing.pack_vector(vector), 25)
    with pytest.raises(packing.PackingError, match="NaN"):
        packing.unpack_vector(np.array([np.nan], dtype="<f4").tobytes())
    with pytest.raises(packing.PackingError, match="multiple of 4"):
        packing.unpack_vector(b"\0" * 5)

    pcm = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.7, -2.0], dtype=np.float32)
    s16 = packing.encode_pcm(pcm, common_pb2.SAMPLE_FORMAT_PCM_S16LE)
    assert np.frombuffer(s16, "<i2").tolist() == [0, 16384, -16384, 32767, -32767, 32767, -32767]
    assert np.allclose(packing.decode_pcm(s16, common_pb2.SAMPLE_FORMAT_UNSPECIFIED), np.clip(pcm, -1, 1), atol=1e-4)
    f32 = packing.encode_pcm(pcm, common_pb2.SAMPLE_FORMAT_PCM_F32LE)
    assert np.array_equal(packing.decode_pcm(f32, common_pb2.SAMPLE_FORMAT_PCM_F32LE), pcm)
    with pytest.raises(packing.PackingError, match="unknown sample format"):
        packing.encode_pcm(pcm, 9)
    with pytest.raises(packing.PackingError, match="multiple of 2"):
        packing.decode_pcm(b"\0" * 3, common_pb2.SAMPLE_FORMAT_PCM_S16LE)


# ---------------------------------------------------------------- logging and metrics


def test_request_log_is_one_json_line():
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(JsonFormatter().format(record))
    logger = logging.getLogger("omni.test.requests")
    logger.addHandler(handler)
    logger.setLevel("INFO")
    log_request(logger, "decode", request_id="r1", outcome="ok", total_ms=12.34567, frames=3)
    line = json.loads(records[0])
    assert "\n" not in records[0]
    assert line["msg"] == "decode" and line["request_id"] == "r1" and line["total_ms"] == 12.346
    # A wall-clock `*_ts` field keeps its microseconds (rounded to ms it would be no use against other processes).
    log_request(logger, "decode", request_id="r0", start_ts=1_700_000_000.1234567)
    assert json.loads(records.pop())["start_ts"] == 1_700_000_000.123457
    # Read back from a log's text: only this event's lines, beside other events and plain text.
    log_request(logger, "generate", request_id="r2", outcome="ok")
    text = "\n".join([records[0], "Traceback (most recent call last):", records[1], "{not json"])
    assert [r["request_id"] for r in request_records(text, "decode")] == ["r1"]
    assert [r["request_id"] for r in request_records(text, "generate")] == ["r2"]


def test_metrics_endpoint_serves_the_service_registry():
    metrics = MetricsServer("demo")
    requests = metrics.counter("requests_total", "requests", ("outcome",))
    requests.labels("ok").inc(3)
    port = metrics.start(0, host="127.0.0.1")
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    finally:
        metrics.stop()
    assert 'demo_requests_total{outcome="ok"} 3.0' in body


# ---------------------------------------------------------------- grpc server


class SlowTalker(talker_pb2_grpc.TalkerServiceServicer):
    """A small real servicer: streams `max_new_tokens` one-frame chunks, one per `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.started = asyncio.Event()

    async def Generate(self, request, context):
        for i in range(request.max_new_tokens):
            self.started.set()
            await asyncio.sleep(self.delay)
            codes = packing.pack_codes(np.full((1, 16), i))
            yield talker_pb2.GenerateResponse(
                chunk=common_pb2.CodecChunk(codes=codes, num_frames=1, num_codebooks=16, first_frame_index=i)
            )
        yield talker_pb2.GenerateResponse(summary=talker_pb2.GenerateSummary(num_frames=request.max_new_tokens))

    async def GetLoad(self, request, context):
        return talker_pb2.GetLoadResponse(load=common_pb2.Load(capacity=4, accepting=True))


SERVICE = "omni.talker.v1.TalkerService"


async def start_service(delay: float = 0.01, grace_s: float = 5.0) -> tuple[GrpcService, SlowTalker]:
    service = GrpcService("demo", "127.0.0.1:0", grace_s=grace_s)
    servicer = SlowTalker(delay)
    service.add(talker_pb2_grpc.add_TalkerServiceServicer_to_server, servicer, SERVICE)
    await service.start()
    return service, servicer


async def health_status(channel, service: str = "") -> int:
    response = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service))
    return response.status


def test_a_service_port_is_its_own_and_the_shared_options_share_it():
    """gRPC servers set SO_REUSEPORT by default, so a second server on a bound port shares it and answers calls meant
    for the first (seen as a rare UNIMPLEMENTED across parallel test workers). A service's port is refused to a
    second server; SHARED_PORT_OPTIONS (the gateway's workers) still share one."""

    async def scenario():
        first, _ = await start_service()
        second = GrpcService("second", f"127.0.0.1:{first.port}")
        with pytest.raises(RuntimeError):
            await second.start()
        await first.stop()
        shared = [GrpcService(f"worker{i}", "127.0.0.1:0", options=SHARED_PORT_OPTIONS) for i in range(2)]
        port = await shared[0].start()
        shared[1].address = f"127.0.0.1:{port}"
        assert await shared[1].start() == port
        for service in shared:
            await service.stop()

    asyncio.run(scenario())


def test_health_reflection_and_rpc_over_loopback():
    async def scenario():
        service, _ = await start_service()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            assert await health_status(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
            assert await health_status(channel, SERVICE) == health_pb2.HealthCheckResponse.NOT_SERVING
            await service.set_serving()
            assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
            assert await health_status(channel, SERVICE) == health_pb2.HealthCheckResponse.SERVING

            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            responses = [r async for r in stub.ServerReflectionInfo(iter([request]))]
            names = {s.name for s in responses[0].list_services_response.service}
            assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names
            request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE)
            responses = [r async for r in stub.ServerReflectionInfo(iter([request]))]
            assert responses[0].file_descriptor_response.file_descriptor_proto  # the talker.proto descriptor

            talker = talker_pb2_grpc.TalkerServiceStub(channel)
            load = await talker.GetLoad(talker_pb2.GetLoadRequest())
            assert load.load.capacity == 4
            messages = [m async for m in talker.Generate(talker_pb2.GenerateRequest(max_new_tokens=3))]
            assert [m.WhichOneof("kind") for m in messages] == ["chunk"] * 3 + ["summary"]
        await service.stop(0)

    asyncio.run(scenario())


def test_graceful_shutdown_finishes_in_flight_streams_and_refuses_new_ones():
    async def scenario():
        service, servicer = await start_service(delay=0.02)
        await service.set_serving()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            talker = talker_pb2_grpc.TalkerServiceStub(channel)
            call = talker.Generate(talker_pb2.GenerateRequest(max_new_tokens=10))
            first = await call.read()
            assert first.chunk.first_frame_index == 0
            stopping = asyncio.create_task(service.stop())
            await asyncio.sleep(0)  # let shutdown begin
            rest = []
            while (message := await call.read()) != grpc.aio.EOF:
                rest.append(message)
            assert len(rest) == 10 and rest[-1].summary.num_frames == 10  # the in-flight stream completed
            await stopping
            assert not service.serving
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await talker.GetLoad(talker_pb2.GetLoadRequest(), timeout=2)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

    asyncio.run(scenario())


def test_shutdown_cancels_streams_that_outlive_the_grace_period():
    async def scenario():
        service, servicer = await start_service(delay=3600, grace_s=0.2)
        await service.set_serving()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            call = talker_pb2_grpc.TalkerServiceStub(channel).Generate(talker_pb2.GenerateRequest(max_new_tokens=2))
            await servicer.started.wait()
            await service.stop()
            with pytest.raises(grpc.aio.AioRpcError) as cut:
                await call.read()
            assert cut.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)

    asyncio.run(scenario())


def test_sigterm_drains_and_exits():
    script = textwrap.dedent(
        """
        import asyncio
        from omni.proto import talker_pb2_grpc
        from omni.services.common.server import SHARED_PORT_OPTIONS, GrpcService, set_switch_interval
        from tests.test_service_common import SlowTalker

        async def main():
            service = GrpcService("demo", "127.0.0.1:0", grace_s=5)
            service.add(talker_pb2_grpc.add_TalkerServiceServicer_to_server, SlowTalker(0.01), "x.TalkerService")
            async def warmup():
                print(service.port, flush=True)
            await service.run(warmup)
            print("stopped", flush=True)

        asyncio.run(main())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(proc.stdout.readline())

        async def check():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING

        asyncio.run(check())
        proc.terminate()  # SIGTERM
        assert proc.stdout.readline().strip() == "stopped"
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
