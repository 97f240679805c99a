"""Packed tensors on the wire: codec codes as int16 bytes, float32 vectors, PCM in int16 or float32.

All layouts are little-endian and row-major. Every unpacking function validates sizes and ranges and raises
`PackingError` (a ValueError) with a message fit for an INVALID_ARGUMENT status.
"""

import numpy as np

from omni.proto import common_pb2

CODE_DTYPE = np.dtype("<i2")
FLOAT_DTYPE = np.dtype("<f4")
INT16_SCALE = 32767.0
SAMPLE_FORMATS = (common_pb2.SAMPLE_FORMAT_PCM_S16LE, common_pb2.SAMPLE_FORMAT_PCM_F32LE)


class PackingError(ValueError):
    """Malformed packed data (wrong size, out-of-range codes, non-finite floats)."""


def pack_codes(codes, num_codebooks: int = 16) -> bytes:
    """Codes [frames, num_codebooks] (any integer array or CPU tensor) -> int16 little-endian bytes."""
    array = np.asarray(codes)
    if array.ndim != 2 or array.shape[1] != num_codebooks:
        raise PackingError(f"codes must have shape [frames, {num_codebooks}], got {list(array.shape)}")
    if array.dtype.kind not in "iu":
        raise PackingError(f"codes must be integers, got {array.dtype}")
    if array.size and (array.min() < 0 or array.max() > np.iinfo(np.int16).max):
        raise PackingError(f"codes must be in [0, 32767], got [{array.min()}, {array.max()}]")
    return array.astype(CODE_DTYPE).tobytes()


def unpack_codes(data: bytes, num_frames: int, num_codebooks: int = 16, codebook_size: int | None = None) -> np.ndarray:
    """int16 bytes -> int64 codes [num_frames, num_codebooks], each in [0, codebook_size) when given."""
    if num_frames < 0 or num_codebooks <= 0:
        raise PackingError(f"bad code shape [{num_frames}, {num_codebooks}]")
    expected = num_frames * num_codebooks * CODE_DTYPE.itemsize
    if len(data) != expected:
        raise PackingError(
            f"codes hold {len(data)} bytes, expected {expected} for [{num_frames}, {num_codebooks}] int16"
        )
    codes = np.frombuffer(data, dtype=CODE_DTYPE).reshape(num_frames, num_codebooks).astype(np.int64)
    if codes.size:
        low, high = int(codes.min()), int(codes.max())
        limit = codebook_size if codebook_size is not None else np.iinfo(np.int16).max + 1
        if low < 0 or high >= limit:
            raise PackingError(f"codes must be in [0, {limit}), got values in [{low}, {high}]")
    return codes


def pack_vector(vector) -> bytes:
    """A float vector [dim] -> float32 little-endian bytes; values must be finite."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1:
        raise PackingError(f"vector must be 1-D, got shape {list(array.shape)}")
    if not np.isfinite(array).all():
        raise PackingError("vector holds NaN or infinite values")
    return array.astype(FLOAT_DTYPE).tobytes()


def unpack_vector(data: bytes, dim: int | None = None) -> np.ndarray:
    """float32 bytes -> float32 [dim]; checks the length (when dim is given) and finiteness."""
    if len(data) % FLOAT_DTYPE.itemsize:
        raise PackingError(f"vector holds {len(data)} bytes, not a multiple of 4 (float32)")
    vector = np.frombuffer(data, dtype=FLOAT_DTYPE).astype(np.float32)
    if dim is not None and vector.shape[0] != dim:
        raise PackingError(f"vector has {vector.shape[0]} floats, expected {dim}")
    if not np.isfinite(vector).all():
        raise PackingError("vector holds NaN or infinite values")
    return vector


def float_to_int16(samples) -> np.ndarray:
    """Float PCM in [-1, 1] -> int16 (clipped, rounded to nearest)."""
    array = np.asarray(samples, dtype=np.float32)
    return np.round(np.clip(array, -1.0, 1.0) * INT16_SCALE).astype(np.int16)


def int16_to_float(samples) -> np.ndarray:
    """int16 PCM -> float32 in [-1, 1]."""
    return np.asarray(samples, dtype=np.int16).astype(np.float32) / INT16_SCALE


def check_sample_format(sample_format: int) -> int:
    """Resolve UNSPECIFIED to PCM_S16LE; reject unknown values."""
    if sample_format == common_pb2.SAMPLE_FORMAT_UNSPECIFIED:
        return common_pb2.SAMPLE_FORMAT_PCM_S16LE
    if sample_format not in SAMPLE_FORMATS:
        raise PackingError(f"unknown sample format {sample_format}")
    return sample_format


def encode_pcm(samples, sample_format: int) -> bytes:
    """Float mono PCM -> bytes in the given common_pb2.SampleFormat."""
    sample_format = check_sample_format(sample_format)
    array = np.asarray(samples, dtype=np.float32)
    if array.ndim != 1:
        raise PackingError(f"PCM must be mono 1-D, got shape {list(array.shape)}")
    if sample_format == common_pb2.SAMPLE_FORMAT_PCM_S16LE:
        return float_to_int16(array).astype("<i2").tobytes()
    return array.astype(FLOAT_DTYPE).tobytes()


def decode_pcm(data: bytes, sample_format: int) -> np.ndarray:
    """Bytes in the given common_pb2.SampleFormat -> float32 mono PCM."""
    sample_format = check_sample_format(sample_format)
    if sample_format == common_pb2.SAMPLE_FORMAT_PCM_S16LE:
        if len(data) % 2:
            raise PackingError(f"int16 PCM holds {len(data)} bytes, not a multiple of 2")
        return int16_to_float(np.frombuffer(data, dtype="<i2"))
    if len(data) % 4:
        raise PackingError(f"float32 PCM holds {len(data)} bytes, not a multiple of 4")
    return np.frombuffer(data, dtype=FLOAT_DTYPE).astype(np.float32)


def bytes_per_sample(sample_format: int) -> int:
    """2 for PCM_S16LE, 4 for PCM_F32LE."""
    return 2 if check_sample_format(sample_format) == common_pb2.SAMPLE_FORMAT_PCM_S16LE else 4
