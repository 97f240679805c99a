"""Helpers of the kernel tests: two talker runners over one tiny checkpoint, one with a Triton kernel option and one
without, prefilled alike (a greedy and a seeded-sampling request), for tests that step both and compare; and a
compile of kernels for sm_90 in a process of its own."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

PREFILLED_SLOTS = [2, 0]  # the slots the two requests were prefilled in, in the order to step them


# The service's CUDA build: every talker kernel it turns on (TalkerRunner flags), for pairs that differ in one more.
SERVICE_KERNELS = {"sampler_kernel": True, "kv_write_kernel": True, "norm_rope_write_kernel": True}


def prefilled_runner_pair(
    checkpoint: Path, fused: bool = False, common: dict | None = None, **kernel_option: bool
) -> tuple[TalkerRunner, TalkerRunner]:
    """(without, with): `kernel_option` is one TalkerRunner flag (e.g. decode_kernel=True); both runners get the
    same two requests in PREFILLED_SLOTS. `fused`: both share a copy of the talker rewired by `fuse_talker_kernels`;
    `common`: TalkerRunner flags both runners get."""
    ((name, value),) = kernel_option.items()
    synth = Synthesizer(checkpoint)
    model = synth.model
    talker = model.talker
    if fused:
        from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels  # imports Triton: only where asked for

        talker = copy.deepcopy(talker)
        fuse_talker_kernels(talker)
    flags = common or {}
    runners = tuple(TalkerRunner(talker, model.config, 3, 64, **flags, **{name: flag}) for flag in (not value, value))
    for runner in runners:
        prefill_two_requests(runner, synth)
    return runners


def prefill_two_requests(runner: TalkerRunner, synth: Synthesizer) -> None:
    """A greedy and a seeded-sampling request (12 frames at most) in PREFILLED_SLOTS of `runner` (3 slots, 64
    positions or more)."""
    texts = ["Hi there.", "A longer sentence for the talker to say."]
    options = [SynthesisOptions(greedy=True, max_new_tokens=12), SynthesisOptions(seed=5, max_new_tokens=12)]
    for slot, text, opt in zip(reversed(PREFILLED_SLOTS), texts, options, strict=True):
        request = SpeechRequest(text=text, speaker="Ryan", language="English")
        runner.prefill(slot, synth.builder.build(request), synth.sampling_params(opt))


def assert_same_steps_bit_for_bit(without: TalkerRunner, with_kernel: TalkerRunner, steps: int) -> None:
    """Step both runners of a pair over PREFILLED_SLOTS: the same codes each step, then the same caches (talker and
    code predictor) and hidden state, to the bit."""
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(steps):
        assert torch.equal(with_kernel.decode_step(slots)[0], without.decode_step(slots)[0]), f"step {step}"
    for name in ("cache", "predictor_cache"):
        assert torch.equal(getattr(with_kernel, name).k, getattr(without, name).k), name
        assert torch.equal(getattr(with_kernel, name).v, getattr(without, name).v), name
    assert torch.equal(with_kernel.last_hidden, without.last_hidden)


def compile_for_sm90(script: str, cache_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `script` (which compiles kernels with triton.compiler.compile(..., target=GPUTarget("cuda", 90, 32)) and
    prints "compiled") with `args` as sys.argv[1:] in a process without TRITON_INTERPRET: the interpreter skips the
    compiler's checks (globals must be constexpr instances, branch types must agree, ...), and the wheel's own
    toolchain needs no GPU."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"TRITON_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300)


def run_kernel_tool_on_cpu(tool: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """tools/`tool` (a kernel-timing tool) on CPU under the Triton interpreter at tiny widths in fp32, one timing of
    one launch per side, with `args`; asserts it exits 0 and returns the process and the rows of its --out JSON."""
    out = tmp_path / "rows.json"
    command = [sys.executable, str(Path(__file__).resolve().parent.parent / "tools" / tool), "--device", "cpu"]
    command += ["--tiny", "--dtype", "float32", "--iters", "1", "--repeats", "1", "--out", str(out), *args]
    env = os.environ | {"TRITON_INTERPRET": "1"}
    # A hang guard, not a timing bound: --both-tilings alone takes ~140 s on a 2-core AMD EPYC (session 69).
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads(out.read_text())["rows"]
