"""Model identity: what a service runs, and whether two services may be paired on one request.

Fingerprints hash the config files and the safetensors headers (names, dtypes, shapes, offsets), not the
weight bytes: cheap on multi-GB checkpoints, and any re-export or different model changes them.
"""

import hashlib
import json
import struct
from pathlib import Path

from omni.proto import common_pb2

PROTOCOL_VERSION = common_pb2.PROTOCOL_VERSION_1
CODEC_FAMILY = "qwen3-tts-tokenizer-12hz"
MODEL_FAMILY = "qwen3-tts-12hz"


def _safetensors_header(path: Path) -> bytes:
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return f.read(length)


def fingerprint_dir(directory: Path) -> str:
    """Hash of the directory's *.json files and safetensors headers (sorted by name), 16 hex digits."""
    digest = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        if path.suffix == ".json":
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        elif path.suffix == ".safetensors":
            digest.update(path.name.encode() + b"\0" + _safetensors_header(path) + b"\0")
    return digest.hexdigest()[:16]


def model_identity(model_dir: str | Path, revision: str = "") -> common_pb2.ModelIdentity:
    """The identity of a Qwen3-TTS checkpoint directory (with its speech_tokenizer/)."""
    model_dir = Path(model_dir)
    codec_dir = model_dir / "speech_tokenizer"
    if not (model_dir / "config.json").is_file() or not codec_dir.is_dir():
        raise FileNotFoundError(f"{model_dir} is not a Qwen3-TTS checkpoint (config.json, speech_tokenizer/)")
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "qwen3_tts":
        raise ValueError(f"{model_dir}: model_type {config.get('model_type')!r} is not qwen3_tts")
    return common_pb2.ModelIdentity(
        model_family=MODEL_FAMILY,
        model_name=model_dir.resolve().name,
        checkpoint_revision=revision,
        checkpoint_fingerprint=fingerprint_dir(model_dir),
        codec_id=f"{CODEC_FAMILY}:{fingerprint_dir(codec_dir)}",
        protocol_version=PROTOCOL_VERSION,
    )


def codec_mismatch(client: common_pb2.ModelIdentity, server: common_pb2.ModelIdentity) -> str | None:
    """Why codes from `client`'s model must not be decoded by `server`'s codec, or None when they may."""
    if client.protocol_version != server.protocol_version:
        return f"protocol version {client.protocol_version} != {server.protocol_version}"
    if client.model_family != server.model_family:
        return f"model family {client.model_family!r} != {server.model_family!r}"
    if client.codec_id != server.codec_id:
        return f"codec id {client.codec_id!r} != {server.codec_id!r}"
    return None
