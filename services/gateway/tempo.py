"""The `speed` field: a pitch-preserving tempo change of a whole utterance (ffmpeg's WSOLA `atempo` filter), applied
after synthesis as vLLM-Omni does for models without native speed control. Whole files only: streams need 1.0."""

from __future__ import annotations

import functools
import shutil
import subprocess

import numpy as np


@functools.cache
def tempo_available() -> bool:
    return shutil.which("ffmpeg") is not None


def _atempo_chain(speed: float) -> str:
    """atempo takes 0.5..100 per stage; 0.25 is two stages of 0.5."""
    stages = []
    while speed < 0.5:
        stages.append(0.5)
        speed /= 0.5
    stages.append(speed)
    return ",".join(f"atempo={s:.6f}" for s in stages)


def change_tempo(audio: np.ndarray, sample_rate: int, speed: float) -> np.ndarray:
    """Float32 mono audio played `speed` times faster, same pitch and sample rate."""
    if speed == 1.0 or audio.size == 0:
        return audio
    command = [
        "ffmpeg", "-v", "error", "-f", "f32le", "-ar", str(sample_rate), "-ac", "1", "-i", "pipe:0",
        "-filter:a", _atempo_chain(speed), "-f", "f32le", "-ar", str(sample_rate), "-ac", "1", "pipe:1",
    ]  # fmt: skip
    # WSOLA drops its last window: feed 100 ms of silence after the audio and cut the output to the exact length.
    padded = np.concatenate([np.asarray(audio, "<f4"), np.zeros(sample_rate // 10, "<f4")])
    result = subprocess.run(command, input=padded.tobytes(), capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ffmpeg atempo failed: {result.stderr.decode(errors='replace')[-500:]}")
    out = np.frombuffer(result.stdout, dtype="<f4")
    n = round(audio.size / speed)
    return np.concatenate([out[:n], np.zeros(max(0, n - out.size), np.float32)])
