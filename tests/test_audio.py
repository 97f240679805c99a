"""omni.audio: decoding of the supported formats, librosa-exact resampling, reference-audio validation."""

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omni.audio import (
    AudioError,
    decode_audio,
    encode_wav_bytes,
    prepare_reference_audio,
    resample,
    write_wav,
)
from tests.reference import run_reference
from tests.speech import espeak_wav


def _encode(samples: np.ndarray, sr: int, fmt: str, subtype: str) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, samples, sr, format=fmt, subtype=subtype)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def speech() -> tuple[np.ndarray, int]:
    samples, sr = decode_audio(espeak_wav("Reference audio for the voice cloning tests, about two seconds."))
    return samples, sr


@pytest.mark.parametrize(
    ("fmt", "subtype", "lossless"),
    [("WAV", "PCM_16", True), ("FLAC", "PCM_16", True), ("OGG", "VORBIS", False), ("MP3", "MPEG_LAYER_III", False)],
)
def test_decode_formats(speech: tuple[np.ndarray, int], fmt: str, subtype: str, lossless: bool) -> None:
    samples, sr = speech
    decoded, decoded_sr = decode_audio(_encode(samples, sr, fmt, subtype))
    assert decoded_sr == sr and decoded.dtype == np.float32 and decoded.ndim == 1
    if lossless:
        np.testing.assert_allclose(decoded, samples, atol=1 / 32768)
    else:
        # Lossy codecs keep the length (within a codec frame) and the waveform (after their delay compensation).
        assert abs(len(decoded) - len(samples)) < 1200
        n = min(len(decoded), len(samples))
        assert np.corrcoef(decoded[:n], samples[:n])[0, 1] > 0.9


def test_stereo_is_averaged_to_mono(speech: tuple[np.ndarray, int]) -> None:
    samples, sr = speech
    stereo = np.stack([samples, 0.25 * samples[::-1]], axis=1)
    decoded, _ = decode_audio(_encode(stereo, sr, "WAV", "FLOAT"))
    np.testing.assert_array_equal(decoded, np.mean(stereo.astype(np.float32), axis=-1))


def test_resample_equals_librosa(tmp_path: Path, speech: tuple[np.ndarray, int]) -> None:
    samples, sr = speech
    rates = [(sr, 24000), (16000, 24000), (44100, 24000), (48000, 24000), (24000, 16000)]
    tasks = []
    for i, (sr_in, sr_out) in enumerate(rates):
        np.save(tmp_path / f"{i}.npy", samples[: sr_in * 1 + 7 * i])
        tasks.append(
            {"name": str(i), "op": "resample", "wav": str(tmp_path / f"{i}.npy"), "sr_in": sr_in, "sr_out": sr_out}
        )
    ref = run_reference("ref_speaker.py", {"tasks": tasks})
    for i, (sr_in, sr_out) in enumerate(rates):
        ours = resample(samples[: sr_in * 1 + 7 * i], sr_in, sr_out)
        assert ours.dtype == np.float32
        np.testing.assert_array_equal(ours, ref[f"{i}.y"])


def test_prepare_reference_audio_resamples_to_24k(speech: tuple[np.ndarray, int]) -> None:
    samples, sr = speech
    for data in (_encode(samples, sr, "WAV", "PCM_16"), _encode(samples, sr, "FLAC", "PCM_16")):
        out = prepare_reference_audio(data)
        assert out.dtype == np.float32 and out.shape == (int(np.ceil(len(samples) * 24000 / sr)),)
        np.testing.assert_array_equal(out, resample(decode_audio(data)[0], sr, 24000))


def test_encode_wav_round_trip(tmp_path: Path, speech: tuple[np.ndarray, int]) -> None:
    samples, sr = speech
    decoded, decoded_sr = decode_audio(encode_wav_bytes(samples, sr))
    assert decoded_sr == sr
    np.testing.assert_allclose(decoded, samples, atol=1 / 32768)
    write_wav(tmp_path / "a.wav", samples, sr)
    np.testing.assert_array_equal(decode_audio((tmp_path / "a.wav").read_bytes())[0], decoded)


def _wav(seconds: float, sr: int = 16000, fill: float | None = None, subtype: str = "PCM_16") -> bytes:
    n = int(seconds * sr)
    x = 0.3 * np.sin(2 * np.pi * 220 * np.arange(n) / sr) if fill is None else np.full(n, fill)
    return _encode(x.astype(np.float32), sr, "WAV", subtype)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"RIFF\x00\x00\x00\x00WAVEgarbage" * 4, "cannot decode"),
        (b"\x00\x01" * 1000, "cannot decode"),
        (_wav(1.0)[:44], "no samples"),
        (_wav(0.5), "shorter than the minimum of 1 s"),
        (_wav(31.0, sr=8000), "longer than the maximum of 30 s"),
        (_wav(2.0, fill=float("nan"), subtype="FLOAT"), "NaN or infinite"),
        (_wav(2.0, fill=0.0), "silent"),
        ("not bytes", "must be bytes"),
        (np.zeros(24000, dtype=np.float32), "must be bytes"),
    ],
    ids=[
        "empty",
        "corrupt-header",
        "noise-bytes",
        "header-only",
        "too-short",
        "too-long",
        "nan",
        "silent",
        "str",
        "array",
    ],
)
def test_prepare_reference_audio_errors(data: object, reason: str) -> None:
    with pytest.raises(AudioError, match=reason):
        prepare_reference_audio(data)  # type: ignore[arg-type]


def test_audio_error_is_value_error_and_size_cap() -> None:
    assert issubclass(AudioError, ValueError)
    with pytest.raises(AudioError, match="more than the limit"):
        prepare_reference_audio(_wav(2.0), max_bytes=1000)
    assert prepare_reference_audio(_wav(1.0)).shape == (24000,)
