"""`make demo`: the whole stack on this machine, driven with the OpenAI SDK.

Runs `omni serve` (talker, codec, reference encoder and gateway as separate processes on loopback ports), then
sends a streaming request and a voice-cloning request through the official OpenAI Python SDK, writes WAV files
under out/, prints time to first audio and the audio duration, and shuts everything down.

Without OMNI_DEMO_MODEL the stack serves a tiny random-weight Base checkpoint: every stage really runs, but the
audio is noise, not speech. OMNI_DEMO_REF_AUDIO / OMNI_DEMO_REF_TEXT give the voice to clone (default: a
synthetic tone, since the tiny model does not care).
"""

import base64
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf
from openai import OpenAI

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
SAMPLE_RATE = 24000
TEXT = "Hello from omni, a streaming text to speech server."


def start_stack(model: str | None) -> tuple[subprocess.Popen, str]:
    """`omni serve` on free ports; returns the process and the HTTP base URL once it is ready."""
    args = [sys.executable, "-m", "omni.cli", "serve", "--port", "0", "--grpc-port", "0"]
    args += ["--work-dir", str(OUT / "serve"), "--log-level", "warning"]
    if model:
        args += ["--model", model]
    print("$ omni " + " ".join(args[3:]), flush=True)
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in process.stdout:
            print("  | " + line.rstrip(), flush=True)
            lines.append(line)
            if line.startswith("Press Ctrl-C"):
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(600)
    match = re.search(r"HTTP API: (http://\S+)/v1", "".join(lines))
    if process.poll() is not None or match is None:
        process.kill()
        raise SystemExit("omni serve did not start; see its output above")
    return process, match.group(1)


def reference_audio() -> tuple[bytes, str]:
    path = os.environ.get("OMNI_DEMO_REF_AUDIO")
    if path:
        return Path(path).read_bytes(), os.environ.get("OMNI_DEMO_REF_TEXT", "")
    t = np.arange(int(2.0 * SAMPLE_RATE)) / SAMPLE_RATE
    tone = 0.3 * np.sin(2 * np.pi * (180 + 40 * np.sin(2 * np.pi * 2 * t)) * t)
    buf = io.BytesIO()
    sf.write(buf, tone.astype(np.float32), SAMPLE_RATE, format="WAV", subtype="PCM_16")
    return buf.getvalue(), "This is the voice to clone."


def main() -> None:
    OUT.mkdir(exist_ok=True)
    model = os.environ.get("OMNI_DEMO_MODEL")
    variant = json.loads((Path(model) / "config.json").read_text())["tts_model_type"] if model else "base"
    process, url = start_stack(model)
    try:
        client = OpenAI(base_url=url + "/v1", api_key="not-needed", max_retries=0, timeout=300)
        model_id = client.models.list().data[0].id
        audio, ref_text = reference_audio()
        ref_uri = "data:audio/wav;base64," + base64.b64encode(audio).decode()
        voice = {"ref_audio": ref_uri, "x_vector_only_mode": True} if variant == "base" else {}

        # 1. Streaming: raw PCM chunks as they are generated.
        start = time.perf_counter()
        first_audio_s = None
        pcm = bytearray()
        with client.audio.speech.with_streaming_response.create(
            model=model_id,
            voice="default",
            input=TEXT,
            response_format="pcm",
            extra_body={"stream_format": "audio", "max_new_tokens": 75, "seed": 1234, **voice},
        ) as response:
            for chunk in response.iter_bytes():
                if first_audio_s is None and chunk:
                    first_audio_s = time.perf_counter() - start
                pcm += chunk
        total_s = time.perf_counter() - start
        samples = np.frombuffer(bytes(pcm), dtype="<i2")
        path = OUT / "demo_stream.wav"
        sf.write(path, samples, SAMPLE_RATE, subtype="PCM_16")
        print(
            f"streaming: first audio after {first_audio_s:.2f} s, {len(samples) / SAMPLE_RATE:.2f} s of audio "
            f"in {total_s:.2f} s -> {path}",
            flush=True,
        )

        # 2. Voice cloning (in-context, with the reference transcript): a whole WAV file.
        if variant != "base":
            print(f"cloning: skipped, {model} is a {variant} checkpoint (cloning needs a Base model)")
            return
        start = time.perf_counter()
        wav = client.audio.speech.create(
            model=model_id,
            voice="default",
            input=TEXT,
            response_format="wav",
            extra_body={"ref_audio": ref_uri, "ref_text": ref_text, "max_new_tokens": 75, "seed": 1234},
        ).content
        elapsed = time.perf_counter() - start
        path = OUT / "demo_clone.wav"
        path.write_bytes(wav)
        info = sf.info(str(path))
        print(f"cloning: {info.duration:.2f} s of audio at {info.samplerate} Hz in {elapsed:.2f} s -> {path}")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)
        print("stack stopped", flush=True)


if __name__ == "__main__":
    main()
