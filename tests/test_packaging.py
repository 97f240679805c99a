"""The installable project: every package is listed in pyproject.toml and a regular wheel carries all of them."""

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"omni": "omni", "services": "omni.services", "kernels": "omni.kernels"}


def source_packages() -> set[str]:
    found = set()
    for top, dotted in MAPPED.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([dotted, *rel.parts]) if rel.parts else dotted)
    return found


def test_pyproject_lists_every_package() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert listed == source_packages()


def test_regular_wheel_contains_every_module(tmp_path: Path) -> None:
    # Build from a copy of the tracked files: setuptools writes build/ into the source tree, which other
    # tests (and a developer's own builds) may be using at the same time.
    source = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)], check=True
    )
    (wheel,) = wheels.glob("omni-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in source_packages():
        assert package.replace(".", "/") + "/__init__.py" in names, package
    assert "omni/proto/talker_pb2.py" in names
