"""tools/bench_talker_step.py's --modes: every extra its help names is accepted, an unknown one stops the run before
any GPU work (session 38's first device call lost a machine start to `+fused-draws` missing from the accepted set)."""

import importlib.util
import os
import re
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the draw kernels run on CPU tensors

import pytest
import torch

from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

ROOT = Path(__file__).resolve().parent.parent


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_talker_step", ROOT / "tools" / "bench_talker_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_extra_named_in_the_help_parses():
    bench = load_bench()
    source = (ROOT / "tools" / "bench_talker_step.py").read_text()
    named = set(re.findall(r"\+([a-z][a-z-]*[a-z])", source.split("modes_help = (")[1].split("\n    )")[0]))
    assert {"kv-write", "fused-draws", "rope-per-forward"} <= named  # the help's extras were found
    assert named <= bench.MODE_EXTRAS
    every = "fused+" + "+".join(sorted(bench.MODE_EXTRAS))
    assert bench.parse_modes(f"{every},sdpa,kernel") == ["sdpa", "kernel", every]  # fused modes last, order kept


@pytest.mark.parametrize("modes", ["fused+fused-draw", "kernel+sampler", "fast", "sdpa,fused+sampler+nope"])
def test_an_unknown_mode_stops_the_run(modes):
    with pytest.raises(SystemExit, match="unknown modes"):
        load_bench().parse_modes(modes)


def test_each_half_of_fused_draws_is_its_own_path_with_the_same_codes(tiny_model_dir):
    """+talker-draw-only and +indexed-draws-only (timing diagnostics) each keep one half of fused_draws on the timed
    runner; both give the codes and slot state of the full setting."""
    bench = load_bench()
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    halves = {"fused-draws": (True, True), "talker-draw-only": (True, False), "indexed-draws-only": (False, True)}
    runners = {}
    for token, (fused_talker, indexed) in halves.items():
        runner = TalkerRunner(synth.model.talker, synth.model.config, 2, 40, scratch_slot=True, sampler_kernel=True,
                              fused_draws=True)  # fmt: skip
        bench.split_fused_draws(runner, {"fused-draws", token})
        assert runner.indexed_draws == indexed, token
        assert (getattr(runner.draw_talker, "func", None) is None) == fused_talker, token  # the off path is a partial
        for slot, options in enumerate(
            [SynthesisOptions(seed=5, max_new_tokens=6), SynthesisOptions(greedy=True, max_new_tokens=6)]
        ):
            request = SpeechRequest(text=f"Say {slot}.", speaker="Ryan", language="English")
            runner.prefill(slot, synth.builder.build(request), synth.sampling_params(options))
        runners[token] = runner
    slots = torch.tensor([1, 0])
    for _ in range(2):
        want = runners["fused-draws"].decode_step_padded(slots)
        for token in ("talker-draw-only", "indexed-draws-only"):
            got = runners[token].decode_step_padded(slots)
            assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True)), token
    for name in ("pending", "seen", "drawn", "finished"):
        assert all(torch.equal(getattr(r, name), getattr(runners["fused-draws"], name)) for r in runners.values())
