"""The committed generated code in omni/proto/ matches protos/ (regenerated into a temp dir)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_code_is_fresh(tmp_path):
    out = tmp_path / "proto"
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_protos.py"), "--out", str(out)], check=True)
    committed = ROOT / "omni" / "proto"
    generated = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    present = {p.name: p.read_text() for p in committed.iterdir() if p.is_file()}
    assert sorted(generated) == sorted(present), "omni/proto/ is stale: run `make proto`"
    stale = [name for name in generated if generated[name] != present[name]]
    assert not stale, f"omni/proto/ is stale in {stale}: run `make proto`"


def test_generated_modules_import_flat_and_round_trip():
    from omni.proto import codec_pb2, common_pb2, refenc_pb2, speech_pb2, talker_pb2  # noqa: F401

    request = codec_pb2.DecodeRequest(
        chunk=common_pb2.CodecChunk(codes=b"\x01\x00" * 16, num_frames=1, num_codebooks=16, last=True)
    )
    again = codec_pb2.DecodeRequest.FromString(request.SerializeToString())
    assert again.WhichOneof("kind") == "chunk" and again.chunk.last and again.chunk.num_frames == 1
    # Each service lives in its own package.
    assert talker_pb2.DESCRIPTOR.package == "omni.talker.v1"
    assert codec_pb2.DESCRIPTOR.services_by_name["CodecService"].full_name == "omni.codec.v1.CodecService"
