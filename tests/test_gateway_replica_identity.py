"""The gateway pairs only replicas that serve its model: a talker must run the gateway's checkpoint, a codec and a
reference encoder its codec. Real talker, codec and reference-encoder services (tiny checkpoints, in process on
loopback) are polled once by a `GrpcBackend`; the incompatible ones are logged and never picked."""

import asyncio
import json
import logging
import shutil
from pathlib import Path

from omni.services.codec.config import CodecConfig
from omni.services.codec.service import build_codec_service
from omni.services.common.identity import model_identity
from omni.services.common.metrics import MetricsServer
from omni.services.gateway.grpc_backend import GrpcBackend
from omni.services.refenc.config import RefencConfig
from omni.services.refenc.service import build_refenc_service
from omni.services.talker.config import TalkerConfig
from omni.services.talker.service import build_talker_service


def other_codec_copy(model_dir: Path, out: Path) -> Path:
    """The same checkpoint with one more JSON file beside the codec's: a different codec id, the same weights."""
    shutil.copytree(model_dir, out)
    (out / "speech_tokenizer" / "release.json").write_text(json.dumps({"note": "another codec build"}))
    return out


def test_incompatible_replicas_are_logged_and_never_picked(tiny_model_dir, tmp_path, caplog):
    base = tiny_model_dir("base")
    other_talker = tiny_model_dir("custom_voice")  # same codec, another checkpoint
    other_codec = other_codec_copy(base, tmp_path / "other_codec")
    ours, theirs = model_identity(base), model_identity(other_codec)
    assert theirs.checkpoint_fingerprint == ours.checkpoint_fingerprint and theirs.codec_id != ours.codec_id

    async def scenario() -> tuple[dict[str, dict[str, bool]], dict[str, str]]:
        def common(model_dir: Path) -> dict:
            return {"model": str(model_dir), "host": "127.0.0.1", "port": 0, "grace_s": 0.1}

        talkers = [build_talker_service(TalkerConfig(**common(d), max_context=256)) for d in (base, other_talker)]
        # A codec (or reference encoder) needs only our codec: this one runs the other checkpoint.
        codecs = [build_codec_service(CodecConfig(**common(d))) for d in (other_talker, other_codec)]
        refencs = [
            build_refenc_service(RefencConfig(**common(d), redis_url=""), MetricsServer("omni_refenc"))
            for d in (base, other_codec)
        ]
        services = [service for service, _ in talkers + codecs + refencs]
        ports = [await service.start() for service in services]
        names = ["talker", "other talker", "codec", "other codec", "refenc", "other refenc"]
        address = {name: f"127.0.0.1:{port}" for name, port in zip(names, ports, strict=True)}
        backend = GrpcBackend(
            base,
            [address["talker"], address["other talker"]],
            [address["codec"], address["other codec"]],
            [address["refenc"], address["other refenc"]],
            poll_s=60,  # one poll: each replica is checked once
        )
        try:
            await backend.start()
            assert await backend.ready()
            picked = {
                pool.name: [r.address for r in pool.ranked()]
                for pool in (backend.talkers, backend.codecs, backend.refencs)
            }
            assert picked == {
                "talker": [address["talker"]],
                "codec": [address["codec"]],
                "refenc": [address["refenc"]],
            }
            compatible = {
                pool.name: {name: r.compatible for name in names if (r := pool.replicas.get(address[name]))}
                for pool in (backend.talkers, backend.codecs, backend.refencs)
            }
            return compatible, address
        finally:
            await backend.close()
            for service in services:
                await service.stop(0.1)
            for _, parts in talkers:
                await parts.engine.stop()
            for _, engine in codecs:
                await engine.stop()
            for _, parts in refencs:
                await parts.cache.close()

    with caplog.at_level(logging.ERROR, logger="omni.gateway"):
        compatible, address = asyncio.run(scenario())
    assert compatible == {
        "talker": {"talker": True, "other talker": False},
        "codec": {"codec": True, "other codec": False},
        "refenc": {"refenc": True, "other refenc": False},
    }
    fingerprint = model_identity(other_talker).checkpoint_fingerprint
    codec_ids = f"codec id {ours.codec_id!r} != {theirs.codec_id!r}"
    errors = [r.getMessage() for r in caplog.records if r.name == "omni.gateway" and r.levelno >= logging.ERROR]
    assert sorted(errors) == sorted(
        [
            f"talker replica {address['other talker']} is incompatible: "
            f"checkpoint {fingerprint!r} != {ours.checkpoint_fingerprint!r}",
            f"codec replica {address['other codec']} is incompatible: {codec_ids}",
            f"reference encoder {address['other refenc']} is incompatible: {codec_ids}",
        ]
    )
