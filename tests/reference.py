"""Runs the official qwen-tts implementation in its own venv (see tools/reference/make_venv.sh).

A test writes a job (a JSON-able dict), a script under tools/reference/ runs it with the
reference venv's python and writes its results to an .npz file, which is returned as a dict of arrays.
The reference is part of `make test`: if its venv is missing the test fails, it is never skipped.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REF_DIR = REPO / "tools" / "reference"


def ref_python() -> str:
    path = os.environ.get("OMNI_REF_PYTHON") or str(REPO / ".venv-ref" / "bin" / "python")
    if not Path(path).exists():
        raise RuntimeError(
            f"reference venv python not found at {path}; run `make setup` (tools/reference/make_venv.sh)"
        )
    return path


def run_reference(script: str, job: dict, timeout: float = 600) -> dict[str, np.ndarray]:
    """Run tools/reference/<script> on `job` in the reference venv and return its npz outputs."""
    with tempfile.TemporaryDirectory() as tmp:
        job_path = Path(tmp) / "job.json"
        out_path = Path(tmp) / "out.npz"
        job_path.write_text(json.dumps(job))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
        proc = subprocess.run(
            [ref_python(), str(REF_DIR / script), str(job_path), str(out_path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
            raise RuntimeError(f"reference script {script} failed with exit code {proc.returncode}")
        with np.load(out_path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
