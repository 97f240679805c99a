"""The installable project: every package is listed in pyproject.toml and a regular wheel carries all of them."""

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
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    (wheel,) = tmp_path.glob("omni-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in source_packages():
        assert package.replace(".", "/") + "/__init__.py" in names, package
    assert "omni/proto/talker_pb2.py" in names
