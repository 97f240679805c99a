"""Generate the Python gRPC code for protos/omni/v1/*.proto into omni/proto/ (a flat package).

    python tools/gen_protos.py [--out DIR]

grpc_tools writes modules that import each other as `omni.v1.<name>_pb2`; we flatten them into one package
and rewrite those imports to `omni.proto.<name>_pb2`, so callers write `from omni.proto import codec_pb2`.
The output is committed; tests/test_protos.py regenerates it and fails when it is stale.
"""

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PROTO_DIR = PROTO_ROOT / "omni" / "v1"
DEFAULT_OUT = ROOT / "omni" / "proto"
IMPORT_RE = re.compile(r"^from omni\.v1 import ", re.MULTILINE)
INIT = '"""Generated gRPC code for protos/omni/v1 (tools/gen_protos.py); do not edit."""\n'


def generate(out_dir: Path) -> list[Path]:
    """Write the generated modules into out_dir (created or replaced) and return their paths."""
    from grpc_tools import protoc  # heavy; imported only when generating

    protos = sorted(PROTO_DIR.glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_DIR}")
    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            *[str(p.relative_to(PROTO_ROOT)) for p in protos],
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        written = []
        for src in sorted((Path(tmp) / "omni" / "v1").iterdir()):
            dst = out_dir / src.name
            dst.write_text(IMPORT_RE.sub("from omni.proto import ", src.read_text()))
            written.append(dst)
    init = out_dir / "__init__.py"
    init.write_text(INIT)
    return [init, *written]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output package directory")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
