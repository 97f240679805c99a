"""Float32 PCM → the response formats: wav, pcm (s16le), flac, mp3, opus (Ogg), all through libsndfile.

Streaming is only defined for pcm and wav: raw s16le chunks, and for wav a 44-byte header first whose size
fields are 0xFFFFFFFF (length unknown), which standard decoders read up to the end of the data.
"""

from __future__ import annotations

import io
import struct

import numpy as np
import soundfile as sf

MEDIA_TYPES = {
    "wav": "audio/wav",
    "pcm": "audio/pcm",
    "flac": "audio/flac",
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
}
# (libsndfile container, subtype) per format.
_SNDFILE = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
    "opus": ("OGG", "OPUS"),
}
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)


def to_pcm16(audio: np.ndarray) -> bytes:
    """Float32 in [-1, 1] → little-endian signed 16-bit bytes (clipped)."""
    clipped = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def streaming_wav_header(sample_rate: int, channels: int = 1, bits: int = 16) -> bytes:
    """RIFF/WAVE header for a stream of unknown length: RIFF and data sizes are 0xFFFFFFFF."""
    block_align = channels * bits // 8
    unknown = 0xFFFFFFFF
    return (
        b"RIFF"
        + struct.pack("<I", unknown)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block_align, block_align, bits)
        + b"data"
        + struct.pack("<I", unknown)
    )


def encode_audio(audio: np.ndarray, sample_rate: int, response_format: str) -> bytes:
    """A whole utterance as one file in `response_format`."""
    if response_format == "pcm":
        return to_pcm16(audio)
    if response_format not in _SNDFILE:
        raise ValueError(f"unsupported response_format {response_format!r}")
    if response_format == "opus" and sample_rate not in OPUS_RATES:
        raise ValueError(f"opus needs a sample rate in {OPUS_RATES}, got {sample_rate}")
    container, subtype = _SNDFILE[response_format]
    buf = io.BytesIO()
    with sf.SoundFile(buf, "w", samplerate=sample_rate, channels=1, format=container, subtype=subtype) as f:
        if subtype == "PCM_16":
            # Our int16 samples, as `pcm` has them: libsndfile's own float conversion scales by 32768 and rounds
            # down, one step below `to_pcm16` (and below the codec's int16) for most samples.
            f.write(np.frombuffer(to_pcm16(audio), dtype="<i2"))
        else:
            f.write(np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0))
    return buf.getvalue()


class StreamEncoder:
    """Encodes a chunk stream for raw streaming: wav gets the unknown-length header before the first chunk."""

    def __init__(self, response_format: str, sample_rate: int) -> None:
        if response_format not in ("pcm", "wav"):
            raise ValueError(f"streaming supports pcm and wav, not {response_format!r}")
        self._header = streaming_wav_header(sample_rate) if response_format == "wav" else b""

    def encode(self, chunk: np.ndarray) -> bytes:
        header, self._header = self._header, b""
        return header + to_pcm16(chunk)

    def flush(self) -> bytes:
        """Bytes still owed at the end (the header, when the stream produced no audio at all)."""
        header, self._header = self._header, b""
        return header
