"""The reference-encoder service over real gRPC on loopback, with a tiny Base checkpoint and a real redis-server."""

import asyncio
import io
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
import soundfile as sf
from omni.services.common.metrics import MetricsServer
from omni.services.common.packing import unpack_codes, unpack_vector
from omni.services.refenc.config import RefencConfig
from omni.services.refenc.service import build_refenc_service, warm_up

from omni.audio import prepare_reference_audio
from omni.commands.serve import free_port
from omni.models.qwen3_tts.codec_encoder import CodecEncoder
from omni.models.qwen3_tts.speaker_encoder import extract_xvector, load_speaker_encoder
from omni.proto import refenc_pb2, refenc_pb2_grpc
from tests.grpc_health import wait_serving
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[1]


def _audio(fmt: str = "WAV", seconds: float = 1.5, freq: float = 220.0, sr: int = 16000, fill=None) -> bytes:
    t = np.arange(int(seconds * sr)) / sr
    x = 0.3 * np.sin(2 * np.pi * freq * t) + 0.05 * np.sin(2 * np.pi * 3 * freq * t) if fill is None else t * 0 + fill
    buffer = io.BytesIO()
    if fill is None:
        sf.write(buffer, np.round(x * 32767).astype(np.int16), sr, format=fmt, subtype="PCM_16")
    else:
        sf.write(buffer, x.astype(np.float32), sr, format="WAV", subtype="FLOAT")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir) -> Path:
    return tiny_model_dir("base")


class Running:
    """An in-process refenc service on a loopback port, with a stub to it."""

    def __init__(self, model_dir: Path, **settings) -> None:
        self.config = RefencConfig(model=str(model_dir), host="127.0.0.1", port=0, grace_s=1.0, **settings)

    async def __aenter__(self) -> "Running":
        self.metrics = MetricsServer("omni_refenc")
        self.service, self.parts = build_refenc_service(self.config, self.metrics)
        await self.service.start()
        self.parts.batcher.start()
        await warm_up(self.parts)
        await self.service.set_serving()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.service.port}")
        self.stub = refenc_pb2_grpc.ReferenceEncoderServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.channel.close()
        await self.service.stop(0.5)
        await self.parts.batcher.stop()
        await self.parts.cache.close()
        if self.parts.registry is not None:
            await self.parts.registry.client.aclose()


async def _status(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value.code(), info.value.details()


def test_encode_equals_models_caches_and_single_flights(model_dir: Path, redis_url: str) -> None:
    pcm = prepare_reference_audio(_audio("WAV"))
    want_codes = CodecEncoder.from_pretrained(model_dir).encode(pcm).numpy()
    want_xvector = extract_xvector(load_speaker_encoder(model_dir), pcm).numpy()

    async def scenario():
        async with Running(model_dir, redis_url=redis_url, max_batch=8, max_wait_ms=20) as svc:
            first = await svc.stub.Encode(refenc_pb2.EncodeRequest(audio=_audio("WAV"), want_x_vector=True))
            second = await svc.stub.Encode(refenc_pb2.EncodeRequest(audio=_audio("FLAC"), want_x_vector=True))
            no_xvector = await svc.stub.Encode(refenc_pb2.EncodeRequest(audio=_audio("WAV")))
            info = await svc.stub.GetModelInfo(refenc_pb2.GetModelInfoRequest())
            other = _audio("WAV", freq=330.0)
            many = await asyncio.gather(*(svc.stub.Encode(refenc_pb2.EncodeRequest(audio=other)) for _ in range(20)))
            sizes = svc.metrics.registry.get_sample_value("omni_refenc_encode_batch_size_count")
            return first, second, no_xvector, info, many, sizes

    first, second, no_xvector, info, many, batches = asyncio.run(scenario())
    assert (first.cache_hit, second.cache_hit, no_xvector.cache_hit) == (False, True, True)
    assert first.cache_key == second.cache_key
    assert first.ref_code_frames == len(want_codes) == int(np.ceil(len(pcm) / 1920))
    np.testing.assert_array_equal(unpack_codes(first.ref_codes, first.ref_code_frames), want_codes)
    np.testing.assert_array_equal(unpack_codes(second.ref_codes, second.ref_code_frames), want_codes)
    np.testing.assert_allclose(unpack_vector(first.x_vector, first.x_vector_dim), want_xvector, atol=1e-6, rtol=0)
    assert first.x_vector_dim == 64 and no_xvector.x_vector == b"" and no_xvector.x_vector_dim == 0
    assert first.duration_s == pytest.approx(1.5)
    assert info.sample_rate == 24000 and len(info.encoder_fingerprint) == 32 and info.model.codec_id
    assert sum(not r.cache_hit for r in many) == 1 and len({r.cache_key for r in many}) == 1
    assert batches == 3  # warm-up, the first request, the 20 identical ones (encoded once)


@pytest.mark.parametrize(
    ("request_fields", "reason"),
    [
        ({"audio": b""}, "audio is empty"),
        ({}, "set `audio` or `voice_name`"),
        ({"audio": b"definitely not audio" * 8}, "cannot decode"),
        ({"audio": _audio(seconds=0.4)}, "shorter than the minimum"),
        ({"audio": _audio(seconds=31, sr=8000)}, "longer than the maximum"),
        ({"audio": _audio(seconds=2, fill=float("nan"))}, "NaN"),
        ({"audio": _audio(seconds=2, fill=0.0)}, "silent"),
    ],
    ids=["empty", "no-source", "corrupt", "too-short", "too-long", "nan", "silent"],
)
def test_bad_audio_is_invalid_argument(model_dir: Path, request_fields: dict, reason: str) -> None:
    async def scenario():
        async with Running(model_dir) as svc:
            return await _status(svc.stub.Encode(refenc_pb2.EncodeRequest(**request_fields)))

    code, details = asyncio.run(scenario())
    assert code == grpc.StatusCode.INVALID_ARGUMENT and reason in details


def test_voice_registry_rpcs(model_dir: Path, redis_url: str) -> None:
    audio = _audio("WAV", seconds=2.0, freq=180.0)

    async def scenario():
        async with Running(model_dir, redis_url=redis_url) as svc:
            stub = svc.stub
            registered = await stub.RegisterVoice(
                refenc_pb2.RegisterVoiceRequest(name="narrator", audio=audio, consent_id="c-1", ref_text="Hi there.")
            )
            by_name = await stub.Encode(refenc_pb2.EncodeRequest(voice_name="narrator", want_x_vector=True))
            listed = await stub.ListVoices(refenc_pb2.ListVoicesRequest())
            got = await stub.GetVoice(refenc_pb2.GetVoiceRequest(name="narrator", include_audio=True))

            def register(name: str, data: bytes):
                return stub.RegisterVoice(refenc_pb2.RegisterVoiceRequest(name=name, audio=data, consent_id="c"))

            errors = [
                await _status(register("narrator", audio)),
                await _status(register("bad name", audio)),
                await _status(register("v2", b"junk" * 9)),
                await _status(stub.Encode(refenc_pb2.EncodeRequest(voice_name="nobody"))),
            ]
            deleted = await stub.DeleteVoice(refenc_pb2.DeleteVoiceRequest(name="narrator"))
            errors.append(await _status(stub.GetVoice(refenc_pb2.GetVoiceRequest(name="narrator"))))
            errors.append(await _status(stub.DeleteVoice(refenc_pb2.DeleteVoiceRequest(name="narrator"))))
            return registered, by_name, listed, got, errors, deleted

    registered, by_name, listed, got, errors, deleted = asyncio.run(scenario())
    voice = registered.voice
    assert (voice.name, voice.consent_id, voice.ref_text, voice.duration_s) == ("narrator", "c-1", "Hi there.", 2.0)
    assert (
        by_name.cache_hit and by_name.ref_text == "Hi there." and by_name.x_vector_dim == 64
    )  # encoded at registration
    assert [v.name for v in listed.voices] == ["narrator"] and got.voice == voice and got.audio == audio
    assert deleted.name == "narrator"
    codes = [code for code, _ in errors]
    assert codes == [
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.NOT_FOUND,
    ]
    assert "already registered" in errors[0][1] and "voice name must be" in errors[1][1]
    assert "cannot decode" in errors[2][1] and "nobody" in errors[3][1]


def test_without_redis_local_cache_and_registry_off(model_dir: Path) -> None:
    async def scenario():
        async with Running(model_dir) as svc:
            first = await svc.stub.Encode(refenc_pb2.EncodeRequest(audio=_audio()))
            second = await svc.stub.Encode(refenc_pb2.EncodeRequest(audio=_audio("FLAC")))
            status = await _status(svc.stub.ListVoices(refenc_pb2.ListVoicesRequest()))
            return first, second, status, svc.parts.cache.backend

    first, second, (code, details), backend = asyncio.run(scenario())
    assert backend == "local" and (first.cache_hit, second.cache_hit) == (False, True)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "--redis-url" in details


def test_omni_refenc_command_serves_metrics_and_shuts_down_on_sigterm(model_dir: Path, redis_url: str) -> None:
    port, metrics_port = free_port(), free_port()
    env = {**os.environ, "OMNI_REFENC_REDIS_URL": redis_url}
    cmd = [sys.executable, "-m", "omni.cli", "refenc", "--model", str(model_dir), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--metrics-port", str(metrics_port)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:

        async def check():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await wait_serving(channel, "omni.refenc.v1.ReferenceEncoderService", proc)
                stub = refenc_pb2_grpc.ReferenceEncoderServiceStub(channel)
                await stub.Encode(refenc_pb2.EncodeRequest(audio=_audio(freq=410.0)))
                return (await stub.Encode(refenc_pb2.EncodeRequest(audio=_audio(freq=410.0)))).cache_hit

        assert asyncio.run(check())
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
        for series in (
            "cache_lookups_total",
            "cache_redis_up",
            "encode_latency_ms",
            "encode_batch_size",
            "registry_voices",
        ):
            assert f"omni_refenc_{series}" in body
        assert 'omni_refenc_cache_lookups_total{result="hit"} 1.0' in body
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert '"msg": "refenc stopped"' in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
