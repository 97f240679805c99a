"""tools/bench_official.py: the official qwen-tts side of the GPU benchmark, smoke-run on CPU in the reference venv.

The run blocks the modules the GPU machine lacks (librosa, soundfile, sox) and those the measured path must not need
(onnxruntime, torchaudio, gradio), so it proves the script's import path works there too.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference import REPO, ref_python

SCRIPT = REPO / "tools" / "bench_official.py"
ABSENT = ("librosa", "soundfile", "sox", "onnxruntime", "torchaudio", "gradio")

# Runs the script with ABSENT unimportable, as on the GPU machine: a None in sys.modules makes `import` raise
# ModuleNotFoundError and importlib.util.find_spec return None, as for a package that is not installed.
LAUNCHER = f"""
import runpy, sys
for name in {ABSENT!r}:
    sys.modules[name] = None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_script(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    return subprocess.run(
        [ref_python(), "-c", LAUNCHER, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_cpu_smoke_run_writes_rows_with_fixed_length(tiny_model_dir, tmp_path: Path) -> None:
    out = tmp_path / "official.json"
    frames, batches = 3, [1, 2]
    proc = run_script(
        "--model", str(tiny_model_dir("custom_voice")), "--device", "cpu", "--frames", str(frames),
        "--batches", *map(str, batches), "--warmup-frames", "2", "--out", str(out),
    )  # fmt: skip
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
    assert proc.returncode == 0
    result = json.loads(out.read_text())

    assert result["env"]["transformers"].startswith("4.57.")
    assert result["env"]["dtype"] == "float32"
    assert result["env"]["attn_implementation"] == {
        "talker": "sdpa",
        "code_predictor": "sdpa",
        "speech_tokenizer": "sdpa",
    }
    assert result["model"]["samples_per_frame"] == 1920 and result["model"]["sample_rate"] == 24000
    # Fixed length: max_new_tokens = frames + 1, the official default sampling otherwise.
    assert result["max_new_tokens"] == frames + 1
    kwargs = result["generate_kwargs"]
    assert kwargs["max_new_tokens"] == frames + 1
    assert kwargs["do_sample"] is True and kwargs["subtalker_dosample"] is True
    assert kwargs["top_k"] == 50 and kwargs["subtalker_top_k"] == 50
    assert kwargs["temperature"] == pytest.approx(0.9) and kwargs["subtalker_temperature"] == pytest.approx(0.9)
    assert kwargs["repetition_penalty"] == pytest.approx(1.05) and kwargs["top_p"] == 1.0
    # ... and the talker's HF generate got min_new_tokens = max_new_tokens (the official generate passes 2).
    assert result["talker_kwargs"]["min_new_tokens"] == result["talker_kwargs"]["max_new_tokens"] == frames + 1
    assert result["talker_kwargs"]["eos_token_id"] == 2150
    assert result["speaker"] == "ryan"  # the tiny checkpoint's first non-dialect speaker

    rows = result["rows"]
    assert [r["batch"] for r in rows] == batches
    for row in rows:
        assert row["frames"] == frames
        assert row["audio_s_per_item"] == pytest.approx(frames * 1920 / 24000)
        assert row["audio_s"] == pytest.approx(row["batch"] * frames * 1920 / 24000, abs=1e-4)
        assert row["audio_s_per_s"] == pytest.approx(row["audio_s"] / row["wall_s"], rel=1e-3)
        assert row["rtf"] == pytest.approx(row["wall_s"] / row["audio_s_per_item"], rel=1e-3)
        assert 0 < row["generate_s"] and 0 < row["decode_s"]
        assert row["generate_s"] + row["decode_s"] <= row["wall_s"] + 1e-3
        assert row["peak_mem_gib"] is None  # CPU
    assert result["best"] == max(rows, key=lambda r: r["audio_s_per_s"])
    assert result["stopped"] is None
    assert "| batch | frames | wall s |" in proc.stdout and "best batch" in proc.stdout


def test_cuda_requested_without_cuda_fails_loudly() -> None:
    proc = run_script("--model", "unused", "--device", "cuda", "--frames", "2")
    assert proc.returncode != 0
    assert "CUDA is not available" in proc.stderr
