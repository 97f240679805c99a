"""Audio in and out: decoding uploads, resampling, reference-audio validation, WAV encoding.

Decoding goes through libsndfile (soundfile), which reads WAV, FLAC, OGG/Vorbis/Opus and MP3 (libsndfile >= 1.1).
Multi-channel audio is averaged to mono and resampling uses soxr "HQ" with librosa's length rule, as the
official qwen-tts wrapper does (`np.mean(audio, axis=-1)`, `librosa.resample` with its default `soxr_hq`).
"""

import io
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

MODEL_SAMPLE_RATE = 24000
MIN_REFERENCE_SECONDS = 1.0
MAX_REFERENCE_SECONDS = 30.0
MAX_AUDIO_BYTES = 10 * 1024 * 1024
# Peak below -80 dBFS (about 3 LSB of 16-bit audio) counts as silence.
SILENCE_PEAK = 1e-4


class AudioError(ValueError):
    """Audio that cannot be used, with the reason in the message."""


def decode_audio(data: bytes) -> tuple[np.ndarray, int]:
    """Encoded audio file bytes -> (float32 mono samples, sample rate)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise AudioError(f"audio must be bytes, got {type(data).__name__}")
    if len(data) == 0:
        raise AudioError("audio is empty (0 bytes)")
    try:
        samples, sr = sf.read(io.BytesIO(bytes(data)), dtype="float32", always_2d=True)
    except (sf.SoundFileError, RuntimeError, TypeError, ValueError) as e:
        raise AudioError(f"cannot decode audio (expected WAV, FLAC, OGG or MP3): {e}") from None
    if samples.shape[0] == 0:
        raise AudioError("audio has no samples")
    mono = samples[:, 0] if samples.shape[1] == 1 else np.mean(samples, axis=-1)
    return np.ascontiguousarray(mono, dtype=np.float32), int(sr)


def resample(x: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Mono float32 resampling, equal to `librosa.resample(x, orig_sr=sr_in, target_sr=sr_out)` (soxr_hq)."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 1:
        raise AudioError(f"resample expects mono audio [N], got shape {x.shape}")
    if sr_in <= 0 or sr_out <= 0:
        raise AudioError(f"sample rates must be positive, got {sr_in} -> {sr_out}")
    if sr_in == sr_out:
        return x
    y = soxr.resample(x, sr_in, sr_out, quality="soxr_hq")
    # librosa trims or zero-pads to ceil(n * ratio) samples.
    n_out = int(np.ceil(x.shape[0] * (float(sr_out) / sr_in)))
    if y.shape[0] > n_out:
        y = y[:n_out]
    elif y.shape[0] < n_out:
        y = np.pad(y, (0, n_out - y.shape[0]))
    return np.asarray(y, dtype=np.float32)


def prepare_reference_audio(
    data: bytes,
    min_seconds: float = MIN_REFERENCE_SECONDS,
    max_seconds: float = MAX_REFERENCE_SECONDS,
    max_bytes: int = MAX_AUDIO_BYTES,
) -> np.ndarray:
    """Validated reference audio file bytes -> float32 mono samples at 24 kHz; AudioError says what is wrong."""
    if isinstance(data, bytes | bytearray | memoryview) and len(data) > max_bytes:
        raise AudioError(f"audio is {len(data)} bytes, more than the limit of {max_bytes}")
    samples, sr = decode_audio(data)
    seconds = samples.shape[0] / sr
    if seconds < min_seconds:
        raise AudioError(f"audio is {seconds:.2f} s long, shorter than the minimum of {min_seconds:g} s")
    if seconds > max_seconds:
        raise AudioError(f"audio is {seconds:.2f} s long, longer than the maximum of {max_seconds:g} s")
    if not np.isfinite(samples).all():
        raise AudioError("audio contains NaN or infinite samples")
    if float(np.max(np.abs(samples))) < SILENCE_PEAK:
        raise AudioError("audio is silent (peak below -80 dBFS)")
    return resample(samples, sr, MODEL_SAMPLE_RATE)


def encode_wav_bytes(samples: np.ndarray, sr: int, subtype: str = "PCM_16") -> bytes:
    """Mono float samples in [-1, 1] -> WAV file bytes (16-bit PCM by default)."""
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim != 1:
        raise AudioError(f"expected mono audio [N], got shape {samples.shape}")
    buffer = io.BytesIO()
    sf.write(buffer, samples, sr, format="WAV", subtype=subtype)
    return buffer.getvalue()


def write_wav(path: str | Path, samples: np.ndarray, sr: int, subtype: str = "PCM_16") -> None:
    Path(path).write_bytes(encode_wav_bytes(samples, sr, subtype))
