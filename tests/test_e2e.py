"""End to end: `omni serve` (talker, codec, refenc and gateway as real subprocesses on loopback) on a tiny Base
checkpoint, driven with the OpenAI SDK, httpx and the gRPC client SDK. One stack is shared by the module; the
test that kills a backend runs last."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
import soundfile as sf
from omni.services.talker.config import TalkerConfig
from openai import OpenAI

from omni.client import SpeechClient, SpeechError
from omni.proto import codec_pb2, codec_pb2_grpc, talker_pb2, talker_pb2_grpc
from tests.processes import SERVE_READY, interrupt_and_wait, popen
from tests.prometheus_server import PrometheusServer
from tests.redis_server import RedisServer

SAMPLE_RATE = 24000
SAMPLES_PER_FRAME = 1920
READY_TIMEOUT_S = 600


def tone_wav(seconds: float = 1.5, rate: int = 16000, freq: float = 300.0) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    x = 0.3 * np.sin(2 * np.pi * freq * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    buf = io.BytesIO()
    sf.write(buf, x.astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


REF_WAV = tone_wav()
REF_URI = "data:audio/wav;base64," + base64.b64encode(REF_WAV).decode()
CLONE = {"ref_audio": REF_URI, "x_vector_only_mode": True}  # the cheapest Base request


def pcm16(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767.0


def int16_distance(a: bytes, b: bytes) -> int:
    """Largest sample difference of two int16 PCM bodies of one length. The same codes decode to within one
    rounding step: the codec's fp32 decode is not bit-identical across batch compositions, nor when a stream's
    queued chunks merge into one row (which depends on timing)."""
    x, y = (np.frombuffer(d, dtype="<i2").astype(np.int32) for d in (a, b))
    assert x.size == y.size > 0
    return int(np.abs(x - y).max())


class Stack:
    def __init__(self, process: subprocess.Popen, lines: list[str], model_dir: Path, work_dir: Path) -> None:
        self.process = process
        self.lines = lines
        self.model_dir = model_dir
        self.work_dir = work_dir  # omni serve's: each service logs to <name>.log there
        self.killed = False  # set by the test that kills a backend: omni serve then exits with an error
        text = "\n".join(lines)
        self.http = re.search(r"HTTP API: (http://\S+)/v1", text).group(1)
        self.grpc = re.search(r"gRPC Speech service:\s+(\S+)", text).group(1)
        self.backends = {
            m.group(1): (m.group(2), int(m.group(3)))
            for m in re.finditer(r"(\w+) service:\s+(\S+) \(pid (\d+)\)", text)
        }

    def talker_load(self):
        with grpc.insecure_channel(self.backends["talker"][0]) as channel:
            return talker_pb2_grpc.TalkerServiceStub(channel).GetLoad(talker_pb2.GetLoadRequest(), timeout=5).load

    def codec_load(self):
        with grpc.insecure_channel(self.backends["codec"][0]) as channel:
            return codec_pb2_grpc.CodecServiceStub(channel).GetLoad(codec_pb2.GetLoadRequest(), timeout=5).load


@pytest.fixture(scope="module")
def stack(tiny_model_dir, tmp_path_factory):
    model_dir = tiny_model_dir("base")
    work = tmp_path_factory.mktemp("serve")
    with RedisServer(work / "redis") as redis:
        process, output = popen(
            "serve", "--model", str(model_dir), "--port", "0", "--grpc-port", "0",
            "--redis-url", redis.url, "--work-dir", str(work), "--max-streams", "32",
        )  # fmt: skip
        lines = output.lines  # appended to as the stack runs: later tests read what it printed since
        stack_: Stack | None = None
        try:
            output.wait_for(SERVE_READY, READY_TIMEOUT_S)
            stack_ = Stack(process, lines, model_dir, work)
            yield stack_
        finally:
            code = interrupt_and_wait(process)
        assert code == (1 if stack_ is not None and stack_.killed else 0), "\n".join(lines)


@pytest.fixture(scope="module")
def openai_client(stack):
    return OpenAI(base_url=stack.http + "/v1", api_key="unused", max_retries=0, timeout=120)


def speech(stack, **body) -> httpx.Response:
    return httpx.post(stack.http + "/v1/audio/speech", json={"input": "Hello there.", **body}, timeout=120)


def test_serve_reports_where_to_send_requests(stack):
    text = "\n".join(stack.lines)
    assert "noise" not in text  # a real --model was given
    assert set(stack.backends) == {"talker", "codec", "refenc"}
    assert httpx.get(stack.http + "/ready").status_code == 200
    models = httpx.get(stack.http + "/v1/models").json()["data"]
    assert [m["id"] for m in models] == [stack.model_dir.name]


def test_every_response_format_decodes(stack, openai_client):
    def create(fmt: str) -> bytes:
        return openai_client.audio.speech.create(
            model=stack.model_dir.name,
            voice="default",
            input="Formats, all of them.",
            response_format=fmt,
            extra_body={**CLONE, "max_new_tokens": 6, "seed": 7},
        ).content

    formats = ["wav", "pcm", "flac", "mp3", "opus"]
    with ThreadPoolExecutor(len(formats)) as pool:
        blobs = dict(zip(formats, pool.map(create, formats), strict=True))
    reference = pcm16(blobs["pcm"])
    assert reference.size > 0 and reference.size % SAMPLES_PER_FRAME == 0
    samples = np.frombuffer(blobs["pcm"], dtype="<i2")
    for fmt in ("wav", "flac"):  # lossless: the same int16 samples (other requests: within one rounding step)
        decoded, rate = sf.read(io.BytesIO(blobs[fmt]), dtype="int16")
        assert rate == SAMPLE_RATE and decoded.size == samples.size
        assert int16_distance(decoded.astype("<i2").tobytes(), blobs["pcm"]) <= 1, fmt
    for fmt in ("mp3", "opus"):  # lossy: same duration within a codec frame's padding
        decoded, rate = sf.read(io.BytesIO(blobs[fmt]), dtype="float32")
        assert abs(decoded.size / rate - reference.size / SAMPLE_RATE) < 0.1, fmt


def test_sse_events_parse(stack):
    body = {"input": "Events.", **CLONE, "stream": True, "response_format": "pcm", "max_new_tokens": 8, "seed": 4}
    response = speech(stack, **body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert deltas and events[-1]["type"] == "speech.audio.done"
    audio = pcm16(b"".join(base64.b64decode(e["audio"]) for e in deltas))
    usage = events[-1]["usage"]
    assert usage["output_tokens"] * SAMPLES_PER_FRAME == audio.size
    assert usage["input_tokens"] > 0


def test_seeded_requests_reproduce_the_same_pcm(stack):
    body = {**CLONE, "response_format": "pcm", "max_new_tokens": 8}
    a, b, c = (speech(stack, **body, seed=seed) for seed in (11, 11, 12))
    assert a.status_code == b.status_code == c.status_code == 200
    assert int16_distance(a.content, b.content) <= 1  # the same codes
    assert int16_distance(a.content, c.content) > 100  # other codes: other audio, not a rounding step


def test_cloning_with_a_data_uri_and_with_a_registered_voice(stack):
    body = {"input": "Clone me.", "response_format": "pcm", "max_new_tokens": 6, "seed": 5}
    icl = speech(stack, **body, ref_audio=REF_URI, ref_text="A reference sentence.")
    assert icl.status_code == 200, icl.text
    assert int(icl.headers["x-vllm-omni-input-audio-tokens"]) > 0  # the reference codes are in the prompt

    upload = httpx.post(
        stack.http + "/v1/audio/voices",
        files={"audio_sample": ("ref.wav", REF_WAV, "audio/wav")},
        data={"name": "tone", "consent": "consent-1", "ref_text": "A reference sentence."},
        timeout=60,
    )
    assert upload.status_code == 200, upload.text
    voices = httpx.get(stack.http + "/v1/audio/voices").json()
    assert "tone" in json.dumps(voices)
    registered = speech(stack, **body, voice="tone")
    assert registered.status_code == 200, registered.text
    # Same audio, same transcript, same seed: the registered voice is the same prompt as the data: URI.
    assert int16_distance(registered.content, icl.content) <= 1
    assert httpx.delete(stack.http + "/v1/audio/voices/tone").status_code == 200
    gone = speech(stack, **body, voice="tone")
    assert gone.status_code == 400 and "tone" in gone.json()["error"]["message"]


def test_thirty_concurrent_streams_all_complete(stack):
    def one(seed: int) -> tuple[int, int]:
        body = {"input": f"Stream {seed}.", **CLONE, "stream_format": "audio", "response_format": "pcm"}
        response = speech(stack, **body, max_new_tokens=4, seed=seed)
        return response.status_code, len(response.content)

    with ThreadPoolExecutor(30) as pool:
        results = list(pool.map(one, range(30)))
    assert all(status == 200 for status, _ in results), results
    assert all(size > 0 and size % (2 * SAMPLES_PER_FRAME) == 0 for _, size in results), results


def test_greedy_end_to_end_equals_omni_synth(stack, tmp_path):
    """Voice cloning with ICL, greedy: the served PCM (reference encoder, prompt ids over gRPC, talker engine,
    codec primed with the reference codes, streamed in chunks) equals `omni synth` (one process, whole-utterance
    decode with the reference as left context) sample for sample in int16."""
    from omni.services.common.packing import float_to_int16

    from omni.cli import main as omni_cli

    text, ref_text, frames = "Greedy, end to end.", "A reference sentence.", 12
    ref = tmp_path / "ref.wav"
    ref.write_bytes(REF_WAV)
    out = tmp_path / "synth.wav"
    omni_cli(
        ["synth", "--model", str(stack.model_dir), "--text", text, "--language", "english"]
        + ["--ref-audio", str(ref), "--ref-text", ref_text, "--greedy", "--max-frames", str(frames), "--out", str(out)]
    )  # the command's own code, in this process (no second interpreter start)
    offline, rate = sf.read(out, dtype="float32")
    assert rate == SAMPLE_RATE

    response = speech(
        stack,
        input=text,
        language="English",
        ref_audio=REF_URI,
        ref_text=ref_text,
        response_format="pcm",
        max_new_tokens=frames + 1,  # N frames take N + 1 draws (the last codebook-0 id is EOS or dropped)
        extra_params={"temperature": 0.0},
    )
    assert response.status_code == 200, response.text
    served = np.frombuffer(response.content, dtype="<i2").astype(np.int32)
    expected = float_to_int16(offline).astype(np.int32)
    assert served.size == expected.size == frames * SAMPLES_PER_FRAME
    # Streaming decode equals whole decode to ~1e-6 in fp32: at most one rounding step apart in int16.
    assert np.abs(served - expected).max() <= 1


def test_grpc_sdk_streams_audio(stack):
    with SpeechClient(stack.grpc) as client:
        stream = client.stream("Over gRPC.", ref_audio=REF_WAV, x_vector_only_mode=True, max_new_tokens=8, seed=9)
        chunks = list(stream)
        assert stream.sample_rate == SAMPLE_RATE and len(chunks) >= 2  # the first chunk, then the rest
        assert chunks[0].size == TalkerConfig().initial_chunk_frames * SAMPLES_PER_FRAME  # the talker's default
        audio = np.concatenate(chunks)
        assert stream.summary.num_frames * SAMPLES_PER_FRAME == audio.size
        assert stream.summary.audio_seconds == pytest.approx(audio.size / SAMPLE_RATE)
        assert stream.summary.stop_reason == "max_new_tokens" and stream.summary.input_tokens > 0
        # The same request over HTTP gives the same samples (float32 over gRPC, int16 over HTTP).
        http = speech(stack, input="Over gRPC.", **CLONE, response_format="pcm", max_new_tokens=8, seed=9)
        np.testing.assert_allclose(audio, pcm16(http.content), atol=1.01 / 32767)
        # The float client got the codec's float samples, not int16 ones converted (the gateway asks the codec for
        # int16 only when the client's output is 16-bit).
        assert np.abs(audio * 32767 - np.round(audio * 32767)).max() > 0.01
        with pytest.raises(SpeechError) as error:
            client.synthesize("Who?", voice="nobody")
        assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT and "nobody" in error.value.message


def test_raw_stream_first_bytes_arrive_during_generation_and_disconnect_frees_both_slots(stack):
    body = {"input": "A long one.", **CLONE, "stream_format": "audio", "response_format": "pcm"}
    body |= {"max_new_tokens": 1500, "initial_codec_chunk_frames": 1, "seed": 3}
    with httpx.stream("POST", stack.http + "/v1/audio/speech", json=body, timeout=120) as response:
        assert response.status_code == 200
        chunks = response.iter_bytes()  # kept referenced: a collected iterator closes the response
        assert len(next(chunks)) > 0
        # Audio left while the talker still generates and the codec still decodes this request.
        assert stack.talker_load().active_streams == 1 and stack.codec_load().active_streams == 1
    # The client went away mid-stream: both backend streams are cancelled and their slots freed.
    for _ in range(300):
        if stack.talker_load().active_streams == 0 and stack.codec_load().active_streams == 0:
            break
        time.sleep(0.1)
    assert stack.talker_load().active_streams == 0
    assert stack.codec_load().active_streams == 0
    assert speech(stack, **CLONE, response_format="pcm", max_new_tokens=2).status_code == 200


def test_bad_requests_get_openai_style_4xx_and_the_stack_stays_healthy(stack):
    noise = "data:audio/wav;base64," + base64.b64encode(b"RIFF not really audio" * 50).decode()
    cases = [
        ({"model": "no-such-model"}, 404, "model"),
        ({"ref_audio": "data:audio/wav;base64,%%%", "x_vector_only_mode": True}, 400, "ref_audio"),
        ({"ref_audio": noise, "x_vector_only_mode": True}, 400, "ref_audio"),
        ({"ref_audio": REF_URI}, 400, "ref_text"),  # ICL needs the transcript
        ({"voice": "nobody", **CLONE}, 400, "voice"),
        ({**CLONE, "response_format": "mp3", "stream": True}, 400, "response_format"),
        ({**CLONE, "max_new_tokens": 5000}, 400, "max_new_tokens"),
    ]
    for body, status, param in cases:
        response = speech(stack, **body)
        assert response.status_code == status, (body, response.text)
        error = response.json()["error"]
        assert error["code"] == status and param in (error["param"] or error["message"]), (body, error)
    assert httpx.get(stack.http + "/ready").status_code == 200
    assert speech(stack, **CLONE, response_format="pcm", max_new_tokens=2).status_code == 200


def test_prometheus_scrapes_the_gateway(stack, tmp_path):
    target = stack.http.removeprefix("http://")
    with PrometheusServer(tmp_path, [target], job="gateway") as prom:
        assert prom.wait_for('up{job="gateway"} == 1')[0]["metric"]["instance"] == target
        ok = prom.wait_for('omni_gateway_requests_total{endpoint="speech",outcome="ok"}')
        assert float(ok[0]["value"][1]) >= 1
        assert float(prom.wait_for("omni_gateway_time_to_first_audio_seconds_count")[0]["value"][1]) >= 1


def test_every_service_freezes_its_startup_heap_and_the_gateway_exports_its_stalls(stack):
    # Garbage collections stop every thread of a process; what startup loaded is frozen out of them once warm.
    for name in ("talker", "codec", "refenc", "gateway"):
        frozen = re.search(r"(\d+) objects frozen", (stack.work_dir / f"{name}.log").read_text())
        assert frozen is not None and int(frozen.group(1)) > 10_000, name
    # The requests served so far made young-generation collections, each observed (the freeze's own is not).
    assert speech(stack, **CLONE, response_format="pcm", max_new_tokens=4).status_code == 200
    metrics = httpx.get(stack.http + "/metrics").text
    young = re.search(r'omni_gateway_gc_pause_seconds_count\{generation="0"\} (\S+)', metrics)
    assert young is not None and float(young.group(1)) >= 1
    # The loop-lag timer has been firing, and the requests' writes to the talker and the codec were each timed.
    lags = re.search(r"omni_gateway_loop_lag_seconds_count (\S+)", metrics)
    assert lags is not None and float(lags.group(1)) >= 1
    for service in ("talker", "codec"):
        writes = re.search(rf'omni_gateway_backend_write_seconds_count\{{service="{service}"\}} (\S+)', metrics)
        assert writes is not None and float(writes.group(1)) >= 1, service


def test_routing_skips_a_dead_replica_and_all_talkers_full_answers_429(tiny_model_dir):
    """In-process talker (1 slot, no queue) and codec behind a GrpcBackend that also lists dead addresses."""
    import asyncio

    from omni.services.codec.config import CodecConfig
    from omni.services.codec.service import build_codec_service
    from omni.services.codec.service import warm_up as codec_warm_up
    from omni.services.gateway.app import create_app
    from omni.services.gateway.backend import Overloaded, SynthesisRequest
    from omni.services.gateway.grpc_backend import GrpcBackend
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import build_talker_service
    from omni.services.talker.service import warm_up as talker_warm_up

    from omni.commands.serve import free_port

    model_dir = tiny_model_dir("base")
    hidden = json.loads((model_dir / "config.json").read_text())["talker_config"]["hidden_size"]

    def request(max_new_tokens: int) -> SynthesisRequest:
        return SynthesisRequest(
            model=model_dir.name, text="Routing.", task_type="Base", speaker_embedding=[0.1] * hidden,
            x_vector_only_mode=True, max_new_tokens=max_new_tokens, seed=1,
        )  # fmt: skip

    async def scenario():
        common = {"model": str(model_dir), "host": "127.0.0.1", "port": 0, "grace_s": 0.5}
        talker, parts = build_talker_service(TalkerConfig(**common, max_streams=1, max_queue=0, max_context=1200))
        codec, engine = build_codec_service(CodecConfig(**common, max_streams=2))
        await talker.start()
        await codec.start()
        parts.engine.start()
        engine.start()
        await talker_warm_up(parts.engine)
        await codec_warm_up(engine)
        dead = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
        backend = GrpcBackend(
            model_dir, [dead[0], f"127.0.0.1:{talker.port}"], [f"localhost:{codec.port}", dead[1]], [], down_s=60
        )
        try:
            await backend.start()
            assert await backend.ready()
            assert [r.address for r in backend.talkers.ranked()] == [f"127.0.0.1:{talker.port}"]
            long = backend.synthesize(request(1000))
            assert (await anext(long)).size > 0  # holds the only talker slot
            with pytest.raises(Overloaded) as full:
                await anext(backend.synthesize(request(4)))
            transport = httpx.ASGITransport(app=create_app(backend))
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
                body = {"input": "Routing.", "speaker_embedding": [0.1] * hidden, "max_new_tokens": 4}
                refused = await client.post("/v1/audio/speech", json=body)
            await long.aclose()  # frees the slot at once
            for _ in range(500):
                if len(parts.engine.slots) == 0:
                    break
                await asyncio.sleep(0.01)
            chunks = [item async for item in backend.synthesize(request(4))]
            return full.value, refused, chunks
        finally:
            await backend.close()
            await talker.stop(0.5)
            await codec.stop(0.5)
            await parts.engine.stop()
            await engine.stop()

    full, refused, chunks = asyncio.run(scenario())
    assert full.retry_after == pytest.approx(1.0)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert sum(c.size for c in chunks[:-1]) == 3 * SAMPLES_PER_FRAME and chunks[-1].output_tokens == 3


def test_zz_a_talker_killed_mid_stream_ends_sse_with_an_error(stack):
    """Runs last: it kills the talker."""
    body = {"input": "Doomed.", **CLONE, "stream": True, "response_format": "pcm", "max_new_tokens": 1500}
    with httpx.stream("POST", stack.http + "/v1/audio/speech", json=body, timeout=120) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
        stack.killed = True
        os.kill(stack.backends["talker"][1], signal.SIGKILL)
        events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert events[-1]["type"] == "speech.audio.error"
    assert "talker" in events[-1]["error"]["message"]
    # omni serve notices the dead service, stops the others and exits with an error naming it.
    assert stack.process.wait(60) == 1
    assert any("omni talker exited" in line for line in stack.lines)
