"""The gateway's HTTP layer under uvicorn on loopback, driven by the official OpenAI SDK and httpx, over the
in-process `ToneBackend` (tests/gateway_fakes.py). End-to-end tests with the real services are separate."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import logging
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest
import soundfile as sf
import uvicorn
from omni.services.common.config import ConfigError, load_config
from omni.services.gateway.app import create_app
from omni.services.gateway.auth import ApiKeys
from omni.services.gateway.config import GatewayConfig, GatewaySettings, gateway_config
from omni.services.gateway.errors import APIError
from omni.services.gateway.ref_audio import RefAudioPolicy, resolve_ref_audio

from tests.gateway_fakes import CHUNK_SAMPLES, NUM_CHUNKS, SAMPLE_RATE, ToneBackend, expected_pcm
from tests.prometheus_server import PrometheusServer

pytestmark = pytest.mark.timeout(120)


@contextlib.contextmanager
def serve(app) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def wav_bytes(seconds: float, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def data_uri(data: bytes, mime: str = "audio/wav") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def ffmpeg_decode(data: bytes) -> np.ndarray:
    """Decode any container with ffmpeg to mono s16 at 24 kHz, as float32."""
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", str(SAMPLE_RATE), "pipe:1"],
        input=data,
        capture_output=True,
        check=True,
    ).stdout
    return np.frombuffer(out, dtype="<i2").astype(np.float32) / 32767.0


def pcm16(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767.0


def wait_until(predicate, what: str) -> None:
    for _ in range(1000):
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def assert_error(response: httpx.Response, status: int, param: str | None = "*") -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"} and error["code"] == status and error["message"]
    if param != "*":
        assert error["param"] == param, error
    return error


@pytest.fixture(scope="module")
def media_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("media")
    (root / "ref.wav").write_bytes(wav_bytes(1.5))
    return root


@pytest.fixture(scope="module")
def gateway(media_root) -> Iterator[tuple[str, ToneBackend]]:
    backend = ToneBackend()
    config = GatewayConfig(max_body_bytes=1_000_000, ref_audio=RefAudioPolicy(allowed_local_roots=(str(media_root),)))
    with serve(create_app(backend, config)) as url:
        yield url, backend


@pytest.fixture()
def http(gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway[0], timeout=30) as client:
        yield client


@pytest.fixture()
def sdk(gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway[0] + "/v1", api_key="unused", max_retries=0)


# --- speech: whole files, raw streams, SSE ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "opus", "pcm"])
def test_every_format_decodes_with_a_standard_decoder(sdk, fmt):
    raw = sdk.audio.speech.with_raw_response.create(
        model="tiny-customvoice", voice="Vivian", input="hello there", response_format=fmt, extra_body={"seed": 7}
    )
    data = raw.content
    assert raw.headers["content-type"].startswith({"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg",
                                                   "opus": "audio/ogg", "pcm": "audio/pcm"}[fmt])  # fmt: skip
    assert raw.headers["x-vllm-omni-input-tokens"] == "2" and raw.headers["x-vllm-omni-output-tokens"] == "8"
    assert raw.headers["x-vllm-omni-total-tokens"] == "10"
    want = expected_pcm(7)
    if fmt == "pcm":
        np.testing.assert_allclose(pcm16(data), want, atol=1e-4)
        return
    decoded = ffmpeg_decode(data)
    if fmt in ("wav", "flac"):  # lossless: sample-exact up to 16-bit rounding, with both decoders
        np.testing.assert_allclose(decoded, want, atol=1e-4)
        audio, rate = sf.read(io.BytesIO(data), dtype="float32")
        assert rate == SAMPLE_RATE
        np.testing.assert_allclose(audio, want, atol=1e-4)
    else:  # lossy: right length (within codec padding) and the same tone
        assert abs(len(decoded) - len(want)) < 2400
        assert np.abs(decoded).max() > 0.3


def test_sdk_streaming_raw_wav_and_sample_rate(sdk):
    with sdk.audio.speech.with_streaming_response.create(
        model="tiny-customvoice", voice="ryan", input="hi", response_format="wav", extra_body={"stream_format": "audio"}
    ) as response:
        data = response.read()
    assert data[:4] == b"RIFF" and data[4:8] == b"\xff\xff\xff\xff"
    np.testing.assert_allclose(ffmpeg_decode(data), expected_pcm(None), atol=1e-4)
    audio, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert rate == SAMPLE_RATE and len(audio) == NUM_CHUNKS * CHUNK_SAMPLES

    raw = sdk.audio.speech.with_raw_response.create(
        model="tiny-customvoice", voice="ryan", input="hi", response_format="pcm", extra_body={"sample_rate": 8000}
    )
    assert abs(len(raw.content) // 2 - NUM_CHUNKS * CHUNK_SAMPLES // 3) <= 2
    custom = sdk.audio.speech.create(model="tiny-customvoice", voice={"id": "Ryan"}, input="hi", response_format="pcm")
    np.testing.assert_allclose(pcm16(custom.content), expected_pcm(None), atol=1e-4)


@pytest.mark.parametrize("speed", [0.25, 0.5, 2.0, 4.0])
def test_speed_changes_tempo_not_pitch(sdk, speed):
    raw = sdk.audio.speech.create(
        model="tiny-customvoice", voice="ryan", input="hi", response_format="pcm", speed=speed
    )
    audio, want = pcm16(raw.content), expected_pcm(None)
    assert len(audio) == round(len(want) / speed)
    assert np.abs(audio[-len(audio) // 10 :]).max() > 0.3  # the tail is audio, not padding
    spectrum = np.abs(np.fft.rfft(audio))  # the tone keeps its frequency
    assert abs(np.argmax(spectrum) * SAMPLE_RATE / len(audio) - 220.0) < 10.0


def test_raw_stream_delivers_first_bytes_before_the_backend_finishes(gateway, http):
    _, backend = gateway
    backend.release.clear()
    finished_before = backend.finished
    body = {"model": "tiny-customvoice", "input": "hold on", "response_format": "pcm", "stream_format": "audio"}
    with http.stream("POST", "/v1/audio/speech", json=body) as response:
        assert response.status_code == 200 and response.headers["content-type"] == "audio/pcm"
        chunks = response.iter_bytes()
        first = next(chunks)
        assert len(first) > 0
        assert backend.finished == finished_before  # the backend is still holding its second chunk
        backend.release.set()
        data = first + b"".join(chunks)
    assert backend.finished == finished_before + 1
    np.testing.assert_allclose(pcm16(data), expected_pcm(None), atol=1e-4)


def parse_sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        payload = json.loads(lines["data"])
        assert payload["type"] == lines["event"]
        events.append((lines["event"], payload))
    return events


def test_sse_events_carry_audio_and_usage(http):
    body = {"model": "tiny-customvoice", "input": "one two three", "response_format": "pcm", "stream": True, "seed": 3}
    response = http.post("/v1/audio/speech", json=body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds == ["speech.audio.delta"] * NUM_CHUNKS + ["speech.audio.done"]
    audio = b"".join(base64.b64decode(p["audio"]) for _, p in events[:-1])
    np.testing.assert_allclose(pcm16(audio), expected_pcm(3), atol=1e-4)
    assert all(p["response_format"] == "pcm" for _, p in events[:-1])
    usage = events[-1][1]["usage"]
    assert usage == {
        "input_tokens": 3,
        "output_tokens": 8,
        "total_tokens": 11,
        "input_token_details": {"text_tokens": 3, "audio_tokens": 0},
    }


def test_concurrent_streams_each_get_their_own_audio(gateway):
    async def one(client: httpx.AsyncClient, seed: int) -> tuple[int, bytes]:
        body = {**GOOD, "input": "many voices", "response_format": "wav", "stream": True, "seed": seed}
        response = await client.post("/v1/audio/speech", json=body)
        events = parse_sse(response.text)
        assert events[-1][0] == "speech.audio.done"
        return seed, b"".join(base64.b64decode(p["audio"]) for _, p in events[:-1])

    async def many() -> list[tuple[int, bytes]]:
        async with httpx.AsyncClient(base_url=gateway[0], timeout=30) as client:
            return await asyncio.gather(*(one(client, seed) for seed in range(30)))

    for seed, wav in asyncio.run(many()):  # SSE wav: the first delta carries the stream header
        audio, rate = sf.read(io.BytesIO(wav), dtype="float32")
        assert rate == SAMPLE_RATE
        np.testing.assert_allclose(audio, expected_pcm(seed), atol=1e-4)


def test_backend_failure_mid_stream_is_never_a_silent_success(http):
    body = {"model": "tiny-customvoice", "input": "fail now", "response_format": "pcm", "stream_format": "sse"}
    events = parse_sse(http.post("/v1/audio/speech", json=body).text)
    assert [k for k, _ in events] == ["speech.audio.delta", "speech.audio.error"]
    error = events[-1][1]["error"]
    assert error["code"] == 500 and error["partial_audio"] is True and error["action"] == "discard"
    assert "codec replica failed" in error["message"]

    body["stream_format"] = "audio"
    with pytest.raises(httpx.RemoteProtocolError):  # the raw stream is cut off, not ended cleanly
        with http.stream("POST", "/v1/audio/speech", json=body) as response:
            response.read()

    body.pop("stream_format")
    assert_error(http.post("/v1/audio/speech", json=body), 500)
    for stream_format in (None, "audio", "sse"):  # no audio at all is an error too, before any byte is sent
        body = {**GOOD, "input": "empty text", "response_format": "pcm", "stream_format": stream_format}
        assert "no audio" in assert_error(http.post("/v1/audio/speech", json=body), 500)["message"]


def test_full_backend_answers_429_with_retry_after(sdk, http):
    response = http.post("/v1/audio/speech", json={"input": "full house"})
    assert_error(response, 429)
    assert response.headers["retry-after"] == "2"
    with pytest.raises(openai.RateLimitError):
        sdk.audio.speech.create(model="tiny-customvoice", voice="ryan", input="full house")


def test_cloning_with_data_uri_file_uri_and_registered_voice(gateway, http, media_root):
    _, backend = gateway
    ref = wav_bytes(1.5)
    body = {"model": "tiny-base", "input": "clone me", "ref_audio": data_uri(ref), "ref_text": "a reference"}
    response = http.post("/v1/audio/speech", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["x-vllm-omni-input-audio-tokens"] == "10"
    request = backend.requests[-1]
    assert request.task_type == "Base" and request.ref_audio == ref and request.ref_text == "a reference"

    body["ref_audio"] = (media_root / "ref.wav").as_uri()
    assert http.post("/v1/audio/speech", json=body).status_code == 200
    assert backend.requests[-1].ref_audio == (media_root / "ref.wav").read_bytes()

    files = {"audio_sample": ("me.wav", ref, "audio/wav")}
    form = {"name": "MyVoice", "consent": "consent-123", "ref_text": "a reference"}
    created = http.post("/v1/audio/voices", files=files, data=form)
    assert created.status_code == 200, created.text
    assert created.json()["voice"]["name"] == "myvoice" and created.json()["voice"]["file_size"] == len(ref)
    listed = http.get("/v1/audio/voices").json()
    assert listed["voices"] == ["default", "myvoice", "ryan", "vivian"]
    assert [v["name"] for v in listed["uploaded_voices"]] == ["myvoice"]
    response = http.post("/v1/audio/speech", json={"model": "tiny-base", "input": "as me", "voice": "MYVOICE"})
    assert response.status_code == 200, response.text
    assert backend.requests[-1].voice == "myvoice" and backend.requests[-1].task_type == "Base"

    assert http.delete("/v1/audio/voices/myvoice").json() == {"success": True, "name": "myvoice"}
    assert_error(http.delete("/v1/audio/voices/myvoice"), 404)
    error = assert_error(
        http.post("/v1/audio/speech", json={"model": "tiny-customvoice", "input": "x", "voice": "myvoice"}), 400
    )
    assert "ryan" in error["message"] and "vivian" in error["message"]  # unknown voice lists the valid ones


def test_voice_upload_rejections(http):
    ok_files = {"audio_sample": ("me.wav", wav_bytes(1.5), "audio/wav")}
    assert_error(http.post("/v1/audio/voices", files=ok_files, data={"name": "a"}), 400, "consent")
    assert_error(http.post("/v1/audio/voices", files=ok_files, data={"name": "a", "consent": " "}), 400, "consent")
    assert_error(http.post("/v1/audio/voices", files=ok_files, data={"name": "ryan", "consent": "c"}), 400, "name")
    assert_error(http.post("/v1/audio/voices", files=ok_files, data={"name": "../x", "consent": "c"}), 400, "name")
    text_file = {"audio_sample": ("me.wav", b"not audio at all" * 100, "audio/wav")}
    assert_error(
        http.post("/v1/audio/voices", files=text_file, data={"name": "a", "consent": "c"}), 400, "audio_sample"
    )
    short = {"audio_sample": ("me.wav", wav_bytes(0.2), "audio/wav")}
    assert_error(http.post("/v1/audio/voices", files=short, data={"name": "a", "consent": "c"}), 400, "audio_sample")
    pdf = {"audio_sample": ("me.pdf", wav_bytes(1.5), "application/pdf")}
    assert_error(http.post("/v1/audio/voices", files=pdf, data={"name": "a", "consent": "c"}), 415)
    assert_error(http.post("/v1/audio/voices", json={"name": "a", "consent": "c"}), 415)
    huge = {"audio_sample": ("me.wav", wav_bytes(40.0), "audio/wav")}  # 1.3 MB, over the 1 MB body limit
    assert_error(http.post("/v1/audio/voices", files=huge, data={"name": "a", "consent": "c"}), 413)
    assert http.get("/v1/audio/voices").json()["uploaded_voices"] == []


# --- bad input --------------------------------------------------------------------------------------------------

GOOD = {"model": "tiny-customvoice", "input": "hello", "voice": "ryan"}
BASE_ONLY = {"model": "tiny-base", "voice": None}
BAD_FIELDS = [
    ({"speed": 0.1}, "speed"),
    ({"speed": 4.5}, "speed"),
    ({"speed": 1.5, "stream_format": "audio", "response_format": "pcm"}, "speed"),  # tempo needs the whole file
    ({"max_new_tokens": 0}, "max_new_tokens"),
    ({"max_new_tokens": 4097}, "max_new_tokens"),
    ({"max_new_tokens": 3000}, "max_new_tokens"),  # above this model's limit
    ({"seed": 2**63}, "seed"),
    ({"seed": "abc"}, "seed"),
    ({"initial_codec_chunk_frames": -1}, "initial_codec_chunk_frames"),
    ({"response_format": "aac"}, "response_format"),
    ({"stream_format": "websocket"}, "stream_format"),
    ({"task_type": "Clone"}, "task_type"),
    ({"task_type": "VoiceDesign"}, "task_type"),  # not this checkpoint's variant
    ({"language": "Klingon"}, "language"),
    ({"voice": "alloy"}, "voice"),
    ({"voice": {"name": "x"}}, "voice"),
    ({"input": ""}, "input"),
    ({"input": "   "}, "input"),
    ({"input": "x" * 4097}, "input"),
    ({"input": 12}, "input"),
    ({"instructions": "y" * 501}, "instructions"),
    ({"sample_rate": 16000}, "sample_rate"),
    ({"sample_rate": 0}, "sample_rate"),
    ({"extra_params": {"temperature": -1}}, "extra_params.temperature"),
    ({"extra_params": {"top_p": 0}}, "extra_params.top_p"),
    ({"extra_params": {"top_k": 0}}, "extra_params.top_k"),
    ({"ignore_eos": "maybe"}, "ignore_eos"),
    ({"stream": True, "response_format": "mp3"}, "response_format"),
    ({"stream_format": "audio", "response_format": "flac"}, "response_format"),
    ({"stream_format": "sse", "response_format": "opus"}, "response_format"),
    ({"ref_text": "only for Base"}, "task_type"),  # infers Base, which this CustomVoice model is not
    ({**BASE_ONLY, "ref_audio": "data:audio/wav;base64,!!!notbase64", "ref_text": "t"}, "ref_audio"),
    ({**BASE_ONLY, "ref_audio": data_uri(b"plain text, not audio" * 50), "ref_text": "t"}, "ref_audio"),
    ({**BASE_ONLY, "ref_audio": data_uri(wav_bytes(0.3)), "ref_text": "t"}, "ref_audio"),  # too short
    ({**BASE_ONLY, "ref_audio": "data:audio/wav,notbase64", "ref_text": "t"}, "ref_audio"),
    ({**BASE_ONLY, "ref_audio": data_uri(wav_bytes(1.5))}, "ref_text"),  # ICL needs a transcript
    (BASE_ONLY, "ref_audio"),  # Base needs something to clone
    ({**BASE_ONLY, "speaker_embedding": [0.1] * 7}, "speaker_embedding"),
    ({**BASE_ONLY, "ref_audio": "ftp://example.com/a.wav", "ref_text": "t"}, "ref_audio"),
    ({**BASE_ONLY, "ref_audio": "http://example.com/a.wav", "ref_text": "t"}, "ref_audio"),  # remote off
    ({**BASE_ONLY, "ref_audio": "file:///etc/passwd", "ref_text": "t"}, "ref_audio"),
]


@pytest.mark.parametrize("override,param", BAD_FIELDS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_FIELDS)])
def test_every_field_bound_is_a_400_with_an_openai_error_body(http, override, param):
    body = {**GOOD, **override}
    error = assert_error(http.post("/v1/audio/speech", json=body), 400, param)
    assert error["type"] == "invalid_request_error"


def test_sdk_sees_bad_requests_as_openai_errors(sdk):
    with pytest.raises(openai.BadRequestError) as info:
        sdk.audio.speech.create(model="tiny-customvoice", voice="ryan", input="hi", speed=9.0)
    assert info.value.body["param"] == "speed"
    with pytest.raises(openai.NotFoundError):
        sdk.audio.speech.create(model="tts-1", voice="ryan", input="hi")


def test_malformed_requests_get_the_right_4xx_and_the_server_stays_healthy(gateway, http):
    url = "/v1/audio/speech"
    json_headers = {"content-type": "application/json"}
    assert_error(http.post(url, content=b'{"input": "hi",', headers=json_headers), 400)
    assert_error(http.post(url, content=b"[1, 2]", headers=json_headers), 400)
    assert_error(http.post(url, json={"voice": "ryan"}), 400, "input")
    assert_error(http.post(url, content=b"input=hi", headers={"content-type": "text/plain"}), 415)
    assert_error(http.post(url, data={"input": "hi"}), 415)
    assert_error(http.post(url, content=json.dumps(GOOD).encode()), 415)  # no content type at all
    assert_error(http.post(url, json={**GOOD, "model": "nope"}), 404, "model")
    assert_error(http.post(url, json={**GOOD, "input": "x" * 1_100_000}), 413)  # declared length

    def chunked():  # no Content-Length: counted as it arrives
        yield b'{"input": "'
        for _ in range(200):
            yield b"x" * 10_000
        yield b'"}'

    assert_error(http.post(url, content=chunked(), headers=json_headers), 413)
    assert_error(http.get("/v1/nothing-here"), 404)
    assert_error(http.get(url), 405)
    assert http.get("/health").json() == {"status": "healthy"}
    response = http.post(url, json=GOOD)
    assert response.status_code == 200 and len(response.content) > 44


# --- cancellation and deadlines --------------------------------------------------------------------------------


def test_client_disconnect_cancels_the_backend_stream(gateway, http):
    url, backend = gateway
    backend.release.clear()
    for stream_format in ("audio", "sse"):
        closed = backend.closed
        body = {**GOOD, "input": "hold it", "response_format": "pcm", "stream_format": stream_format}
        with http.stream("POST", "/v1/audio/speech", json=body) as response:
            chunks = response.iter_bytes()  # kept: a dropped iterator closes the connection
            assert next(chunks)
            assert backend.active == 1
        wait_until(lambda closed=closed: backend.closed == closed + 1, f"{stream_format} stream closed")
        assert backend.active == 0

    closed = backend.closed
    with pytest.raises(httpx.ReadTimeout):  # non-streaming: the client gives up while the backend holds
        httpx.post(url + "/v1/audio/speech", json={**GOOD, "input": "hold it"}, timeout=0.5)
    wait_until(lambda: backend.closed == closed + 1, "non-streaming request closed")
    assert backend.active == 0 and backend.finished < backend.started
    backend.release.set()


def test_deadline_ends_requests_and_frees_the_backend():
    backend = ToneBackend()
    with serve(create_app(backend, GatewayConfig(request_timeout_s=1.0))) as url, httpx.Client(base_url=url) as http:
        assert_error(http.post("/v1/audio/speech", json={**GOOD, "input": "hold x"}), 504)
        body = {**GOOD, "input": "hold x", "response_format": "pcm", "stream": True}
        events = parse_sse(http.post("/v1/audio/speech", json=body).text)
        assert [k for k, _ in events] == ["speech.audio.delta", "speech.audio.error"]
        assert events[-1][1]["error"]["code"] == 504
        wait_until(lambda: backend.closed == 2, "both streams closed")
        assert backend.finished == 0
        metrics = http.get("/metrics").text
        assert 'omni_gateway_requests_total{endpoint="speech",outcome="timeout"} 2.0' in metrics


# --- auth, probes, models, metrics, OpenAPI ---------------------------------------------------------------------


def test_api_keys(tmp_path, monkeypatch):
    keys_file = tmp_path / "keys"
    keys_file.write_text("# operators\nsecret-one\n")
    monkeypatch.setenv("OMNI_API_KEYS", "secret-two, ")
    keys = ApiKeys.load(keys_file)
    assert keys.enabled and keys.check_header("Bearer secret-two") and not keys.check_header("Basic secret-one")
    with serve(create_app(ToneBackend(), GatewayConfig(api_keys=keys))) as url:
        for key in (None, "wrong", "secret-on"):
            headers = {"authorization": f"Bearer {key}"} if key else {}
            response = httpx.post(url + "/v1/audio/speech", json=GOOD, headers=headers)
            assert_error(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
        assert_error(httpx.post(url + "/v1/audio/speech", content=b"{bad json"), 401)  # auth before the body
        assert_error(httpx.get(url + "/v1/models"), 401)
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).models.list()
        client = openai.OpenAI(base_url=url + "/v1", api_key="secret-one", max_retries=0)
        assert len(client.audio.speech.create(model="tiny-customvoice", voice="ryan", input="hi").content) > 44
        assert httpx.get(url + "/ready").status_code == 200  # probes stay open


def test_settings_from_flags_env_and_profile(tmp_path, monkeypatch):
    monkeypatch.delenv("OMNI_API_KEYS", raising=False)
    keys_file = tmp_path / "keys"
    keys_file.write_text("k1\n")
    profile = tmp_path / "profile.yaml"
    profile.write_text("gateway:\n  max_input_chars: 1000\n  request_timeout_s: 60\n")
    env = {"OMNI_GATEWAY_REF_AUDIO_ALLOWED_NETWORKS": "10.0.0.0/8,fd00::/8", "OMNI_GATEWAY_REQUEST_TIMEOUT_S": "30"}
    flags = {"api_keys_file": str(keys_file), "ref_audio_local_roots": str(tmp_path), "profile": str(profile)}
    config = gateway_config(load_config(GatewaySettings, "gateway", flags=flags, env=env))
    assert config.max_input_chars == 1000 and config.request_timeout_s == 30.0
    assert config.ref_audio.allowed_networks == ("10.0.0.0/8", "fd00::/8")
    assert config.ref_audio.allowed_local_roots == (str(tmp_path),) and not config.ref_audio.allow_remote
    assert config.api_keys.check_header("Bearer k1") and not config.api_keys.check_header("Bearer k2")
    for bad in ({"ref_audio_allowed_networks": "10.0.0.0/33"}, {"ref_audio_local_roots": str(tmp_path / "nope")}):
        with pytest.raises(ConfigError):
            gateway_config(load_config(GatewaySettings, "gateway", flags=bad, env={}))


def test_probes_models_and_openapi(gateway, http, sdk):
    _, backend = gateway
    assert http.get("/live").json() == {"status": "alive"}
    assert http.get("/ready").json() == {"status": "ready"}
    backend.is_ready = False
    try:
        assert_error(http.get("/ready"), 503)
        assert_error(http.get("/health"), 503)
        assert http.get("/live").status_code == 200
    finally:
        backend.is_ready = True
    assert [m.id for m in sdk.models.list().data] == ["tiny-customvoice", "tiny-base"]
    assert sdk.models.retrieve("tiny-base").id == "tiny-base"
    schema = http.get("/openapi.json").json()
    speech = schema["paths"]["/v1/audio/speech"]["post"]
    assert "422" not in speech["responses"] and "400" in speech["responses"] and "429" in speech["responses"]
    assert set(speech["responses"]["200"]["content"]) >= {"audio/wav", "audio/pcm", "audio/mpeg", "text/event-stream"}
    fields = schema["components"]["schemas"]["SpeechRequest"]["properties"]
    assert fields["speed"]["minimum"] == 0.25 and fields["speed"]["maximum"] == 4.0
    assert {"type": "object", "properties": {"id": {"type": "string"}}}.items() <= fields["voice"]["anyOf"][1].items()
    for name in (
        "input",
        "task_type",
        "ref_audio",
        "x_vector_only_mode",
        "initial_codec_chunk_frames",
        "stream_format",
        "ignore_eos",
    ):
        assert name in fields
    upload = schema["paths"]["/v1/audio/voices"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in upload


def test_metrics_and_request_log_after_traffic(http, caplog):
    caplog.set_level(logging.INFO, logger="omni.gateway")
    before = time.time()
    http.post("/v1/audio/speech", json={**GOOD, "response_format": "pcm", "stream": True})
    http.post("/v1/audio/speech", json={**GOOD, "speed": 1.5, "stream": True, "response_format": "pcm"})
    http.post("/v1/audio/speech", json={**GOOD, "input": "full again"})
    http.post("/v1/audio/speech", json={**GOOD, "speed": 0.1})  # a schema error, counted per response
    text = http.get("/metrics").text
    for name in (
        "omni_gateway_time_to_first_audio_seconds_bucket",
        "omni_gateway_real_time_factor_bucket",
        "omni_gateway_underrun_seconds_bucket",
        "omni_gateway_audio_seconds_total",
        "omni_gateway_requests_in_flight 0.0",
        'omni_gateway_requests_total{endpoint="speech",outcome="ok"}',
        'omni_gateway_requests_total{endpoint="speech",outcome="client_error"}',
        'omni_gateway_requests_total{endpoint="speech",outcome="rejected"}',
        'omni_gateway_http_responses_total{path="/v1/audio/speech",status="400"}',
        'omni_gateway_http_responses_total{path="/v1/audio/speech",status="429"}',
    ):
        assert name in text, name
    records = [r for r in caplog.records if r.name == "omni.gateway" and r.getMessage() == "speech"]
    lines = [r.fields for r in records]
    assert [line["outcome"] for line in lines] == ["ok", "client_error", "rejected"]
    ok = lines[0]
    # The handler's start on the wall clock: after the client began, and no later than the line's time less its
    # total (which is late by the moments spent between reading the total and making the line); both to the µs.
    assert before <= ok["start_ts"] <= records[0].created - ok["total_ms"] / 1000.0 + 2e-6
    assert ok["stream"] == "sse" and ok["model"] == "tiny-customvoice" and ok["ttfa_ms"] >= 0
    # The handler marks when the voice list was read; this fake backend marks nothing of its own.
    assert 0 <= ok["voices_ms"] <= ok["ttfa_ms"] and ok["prepared_ms"] is None and ok["talker_sent_ms"] is None
    assert ok["audio_s"] == NUM_CHUNKS * CHUNK_SAMPLES / SAMPLE_RATE
    assert "speed" in lines[1]["reason"]


def test_prometheus_scrapes_the_gateway(gateway, http, tmp_path):
    http.post("/v1/audio/speech", json={**GOOD, "response_format": "pcm", "stream_format": "audio"})
    target = gateway[0].removeprefix("http://")
    with PrometheusServer(tmp_path, [target], job="gateway") as prom:
        up = prom.wait_for('up{job="gateway"} == 1')
        assert up[0]["metric"]["instance"] == target
        ok = prom.wait_for('omni_gateway_requests_total{endpoint="speech",outcome="ok"}')
        assert float(ok[0]["value"][1]) >= 1
        ttfa = prom.wait_for('omni_gateway_time_to_first_audio_seconds_count{stream="audio"}')
        assert float(ttfa[0]["value"][1]) >= 1
        assert prom.wait_for("omni_gateway_requests_in_flight")[0]["value"][1] == "0"


# --- ref_audio resolution: SSRF and path traversal ----------------------------------------------------------------


class _AudioHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
            return
        body = wav_bytes(1.5) if self.path == "/ref.wav" else wav_bytes(40.0)  # 1.3 MB, over 30 s
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the gateway stops reading at its limit
            self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def audio_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AudioHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def resolve(uri: str, policy: RefAudioPolicy) -> bytes:
    return asyncio.run(resolve_ref_audio(uri, policy))


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1/ref.wav",
        "http://localhost/ref.wav",
        "http://2130706433/ref.wav",  # 127.0.0.1 as a decimal integer
        "http://0.0.0.0/ref.wav",
        "http://10.1.2.3/ref.wav",
        "http://192.168.0.10/ref.wav",
        "http://100.64.0.1/ref.wav",  # carrier-grade NAT
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://[::1]/ref.wav",
        "http://[::ffff:127.0.0.1]/ref.wav",
        "http://[fd00:ec2::254]/ref.wav",
        "http://[64:ff9b::a9fe:a9fe]/ref.wav",  # NAT64 form of the metadata address
        "https://user:pw@example.com/ref.wav",
    ],
)
def test_ssrf_targets_are_refused(uri):
    policy = RefAudioPolicy(allow_remote=True)
    with pytest.raises(APIError) as info:
        resolve(uri, policy)
    assert info.value.status == 400 and info.value.param == "ref_audio"


def test_remote_fetch_only_when_allow_listed(audio_server):
    open_policy = RefAudioPolicy(allow_remote=True)
    with pytest.raises(APIError, match="non-public"):
        resolve(audio_server + "/ref.wav", open_policy)
    trusted = RefAudioPolicy(allow_remote=True, allowed_networks=("127.0.0.0/8",))
    assert resolve(audio_server + "/ref.wav", trusted) == wav_bytes(1.5)
    with pytest.raises(APIError, match="redirects"):
        resolve(audio_server + "/redirect", trusted)
    with pytest.raises(APIError, match="larger than"):
        resolve(audio_server + "/big.wav", RefAudioPolicy(allow_remote=True, allowed_networks=("127.0.0.0/8",),
                                                          max_bytes=100_000))  # fmt: skip
    with pytest.raises(APIError, match="longer than the maximum"):
        resolve(audio_server + "/long.wav", trusted)
    domains = RefAudioPolicy(allow_remote=True, allowed_networks=("127.0.0.0/8",), allowed_domains=("example.com",))
    with pytest.raises(APIError, match="allowed domains"):
        resolve(audio_server + "/ref.wav", domains)
    with pytest.raises(APIError, match="disabled"):
        resolve(audio_server + "/ref.wav", RefAudioPolicy())


def test_file_uris_stay_inside_the_allowed_roots(tmp_path):
    root = tmp_path / "voices"
    root.mkdir()
    (root / "ok.wav").write_bytes(wav_bytes(1.5))
    (tmp_path / "secret.wav").write_bytes(wav_bytes(1.5))
    (root / "escape.wav").symlink_to(tmp_path / "secret.wav")
    policy = RefAudioPolicy(allowed_local_roots=(str(root),))
    assert resolve((root / "ok.wav").as_uri(), policy) == wav_bytes(1.5)
    for uri in (
        f"file://{root}/../secret.wav",
        f"file://{root}/%2e%2e/secret.wav",
        (root / "escape.wav").as_uri(),
        (tmp_path / "secret.wav").as_uri(),
        f"file://otherhost{root}/ok.wav",
        f"file://{root}/missing.wav",
        f"file://{root}",
    ):
        with pytest.raises(APIError) as info:
            resolve(uri, policy)
        assert info.value.status == 400, uri
    with pytest.raises(APIError, match="disabled"):
        resolve((root / "ok.wav").as_uri(), RefAudioPolicy())
