"""kernels/programmatic_launch.py: programmatic dependent launch for the talker step's Triton kernels.

The launch itself needs an sm_90 GPU (tools/bench_talker_step.py's +pdl times it and checks its bits there). Here:
the switch, the talker service's setting, that every Triton kernel of a decode step takes it (the launches seen
under the interpreter), and the wait in the compiled PTX."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU tensors

import logging

import pytest
import torch
from omni.kernels import programmatic_launch
from omni.kernels.programmatic_launch import launch_options, set_programmatic_launch

from omni.launch_rows import launch_rows, launching_rows
from tests.kernel_runners import compile_for_sm90
from tests.tool_modules import TOOLS, load_tool


@pytest.fixture
def switch():
    """The process-wide switch, back off after the test."""
    yield set_programmatic_launch
    set_programmatic_launch(False)


def test_the_switch_is_off_by_default_and_never_on_under_the_interpreter(switch, monkeypatch):
    assert launch_options() == {"PDL": False, "launch_pdl": False}
    switch(True)
    assert launch_options() == {"PDL": False, "launch_pdl": False}  # the interpreter runs no PTX
    monkeypatch.setattr(programmatic_launch, "INTERPRETED", False)  # as on a GPU
    assert launch_options() == {"PDL": True, "launch_pdl": True}
    switch(False)
    assert launch_options() == {"PDL": False, "launch_pdl": False}


def step_launches(runner, pdl: bool, monkeypatch, rows: int = 2, max_rows: int = 0) -> list[tuple[str, object, object]]:
    """Every Triton launch of one decode step of `rows` of `runner`'s rows with the switch `pdl` (and `max_rows`) and
    the launch options as a GPU would get them: (kernel, PDL, launch_pdl) each. The launches run under the interpreter
    with PDL off (it cannot run the wait)."""
    from triton.runtime.interpreter import InterpretedFunction

    seen, run = [], InterpretedFunction.run

    def recorded(self, *args, **kwargs):
        seen.append((self.fn.__name__, kwargs.get("PDL"), kwargs.get("launch_pdl")))
        return run(self, *args, **(kwargs | {"PDL": False, "launch_pdl": False}))

    set_programmatic_launch(pdl, max_rows=max_rows)
    monkeypatch.setattr(programmatic_launch, "INTERPRETED", False)
    monkeypatch.setattr(InterpretedFunction, "run", recorded)
    with torch.no_grad():
        runner.decode_step_padded(torch.arange(rows))
    monkeypatch.undo()
    return seen


def test_every_kernel_of_a_decode_step_launches_programmatically_when_on(switch, monkeypatch):
    """The tiny talker as the service builds it on a GPU: with the switch on every Triton launch of a decode step
    (GEMMs, norms, attention, draws, ...) asks for programmatic launch and tells its kernel to wait first; off, none
    does."""
    runner = load_tool("census_talker_step").build("tiny", 2, rope_per_forward=False)
    on = step_launches(runner, True, monkeypatch)
    kernels = {name for name, _, _ in on}
    step_kernels = {
        "_skinny_linear_kernel",
        "_add_rms_norm_kernel",
        "_rms_norm_kernel",
        "_norm_rope_write_kernel",
        "_decode_attention_kernel",
        "_silu_mul_kernel",
        "_draw_kernel",
        "_draw_talker_kernel",
    }
    assert step_kernels <= kernels
    assert len(on) > 300 and all(pdl is True and launch is True for _, pdl, launch in on), on
    off = step_launches(runner, False, monkeypatch)
    assert [name for name, _, _ in off] == [name for name, _, _ in on]
    assert all(pdl is False and launch is False for _, pdl, launch in off)


def test_with_max_rows_only_steps_of_at_most_that_many_rows_launch_programmatically(switch, monkeypatch):
    """programmatic_launch_max_rows: a decode step of more rows than it launches every kernel as before, one of at most
    that many with the launch (a CUDA graph keeps what its bucket's capture launched); no launch outside a step takes
    it; without max_rows every launch does."""
    runner = load_tool("census_talker_step").build("tiny", 2, rope_per_forward=False)
    one = step_launches(runner, True, monkeypatch, rows=1, max_rows=1)
    two = step_launches(runner, True, monkeypatch, rows=2, max_rows=1)
    assert len(one) > 300 and all(pdl is True and launch is True for _, pdl, launch in one)
    assert len(two) == len(one) and all(pdl is False and launch is False for _, pdl, launch in two)
    monkeypatch.setattr(programmatic_launch, "INTERPRETED", False)
    switch(True, early_weights=True, max_rows=16)
    assert not programmatic_launch.programmatic_launch() and not programmatic_launch.early_weights()  # not in a step
    with launching_rows(16):
        assert programmatic_launch.programmatic_launch() and programmatic_launch.early_weights()
        with launching_rows(17):
            assert launch_options() == {"PDL": False, "launch_pdl": False} and not programmatic_launch.early_weights()
        assert launch_options() == {"PDL": True, "launch_pdl": True}
    switch(True, early_weights=True)
    assert programmatic_launch.programmatic_launch() and programmatic_launch.early_weights()
    with pytest.raises(ValueError, match="max_rows must be 0"):
        switch(True, max_rows=-1)


def test_the_runner_launches_each_step_and_prefill_as_its_rows():
    """The rows the launches inside a talker forward belong to: a decode step's batch, a prefill's padded positions
    (chunks x the widest chunk; a graph's fixed [B, W]); none between them."""
    from omni.talker.prompt import NO_ID, TalkerPrompt

    runner = load_tool("census_talker_step").build("tiny", 2, rope_per_forward=False)
    seen = []
    runner.talker.register_forward_pre_hook(lambda module, args: seen.append(launch_rows()))
    with torch.no_grad():
        runner.decode_step(torch.arange(2))
        runner.decode_step(torch.tensor([1]))
        prompt = TalkerPrompt(text_ids=torch.arange(5), codec_ids=torch.full((5,), NO_ID), trailing_ids=torch.arange(2))
        embedded = runner.embed_prompt(prompt)
        runner.prefill_batch([(0, embedded, 0, 4), (1, embedded, 2, 5)])
        width = embedded.shape[0]
        x = torch.zeros(2, width, embedded.shape[1], dtype=embedded.dtype)
        positions = torch.arange(width).expand(2, width)
        runner.prefill_padded(
            x, positions, torch.tensor([0, 1]), torch.tensor([width - 1] * 2), torch.ones(2, dtype=torch.bool)
        )
    assert seen == [2, 1, 2 * 4, 2 * width] and launch_rows() == 0


def test_the_talker_service_turns_it_on_only_where_the_gpu_has_it(switch, monkeypatch, caplog):
    """programmatic_launch (on by default, in steps of at most 64 rows since run 173) is set by apply_kernels on CUDA
    where the device has compute capability 9.0 or more, and programmatic_early_weights with it; asked for on a device
    without it, it stays off and says so."""
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import apply_kernels

    from omni.models.qwen3_tts.config import Qwen3TTSConfig
    from omni.models.qwen3_tts.talker import Qwen3TTSTalker
    from omni.models.qwen3_tts.tiny import tiny_config

    defaults = TalkerConfig()
    assert defaults.programmatic_launch and defaults.programmatic_launch_max_rows == 64
    assert not defaults.programmatic_early_weights
    talker = Qwen3TTSTalker(Qwen3TTSConfig.parse(tiny_config("custom_voice")).talker).eval()
    monkeypatch.setattr(programmatic_launch, "INTERPRETED", False)  # read the switch as a GPU launch would

    def switch_at(rows: int) -> tuple[bool, bool]:
        """(programmatic launch, early weights) as a launch in a step of `rows` rows reads them."""
        with launching_rows(rows):
            return programmatic_launch.programmatic_launch(), programmatic_launch.early_weights()

    with caplog.at_level(logging.INFO, logger="omni.talker"):
        apply_kernels(talker, defaults, on_cuda=True)  # this machine: no sm_90 GPU
    assert switch_at(1) == (False, False) and "compute capability 9.0" in caplog.text
    monkeypatch.setattr(programmatic_launch, "device_supports", lambda: True)
    apply_kernels(talker, defaults, on_cuda=True)
    assert switch_at(1) == switch_at(64) == (True, False) and switch_at(65) == (False, False)
    assert not programmatic_launch.programmatic_launch()  # outside a step
    apply_kernels(talker, TalkerConfig(programmatic_early_weights=True), on_cuda=True)
    assert switch_at(64) == (True, True) and switch_at(65) == (False, False)
    apply_kernels(talker, TalkerConfig(programmatic_launch=False, programmatic_early_weights=True), on_cuda=True)
    assert switch_at(1) == (False, False)  # early weights only with the launch
    apply_kernels(talker, TalkerConfig(programmatic_launch_max_rows=0), on_cuda=True)
    assert switch_at(512) == (True, False) and programmatic_launch.programmatic_launch()  # every launch
    with pytest.raises(ValueError, match="programmatic_launch_max_rows must be >= 0"):
        TalkerConfig(programmatic_launch_max_rows=-1).validate()


COMPILE = """
import json, re, sys
sys.path.insert(0, sys.argv[1])  # tools/
from compare_kernel_code import Case, compile_case

ACCESS = re.compile(r"\\b((ld|st)\\.global|cp\\.async|atom\\.|red\\.)")  # global memory accesses in PTX
for fields in json.loads(open(sys.argv[2]).read()):
    case = Case(**fields)
    compiled = compile_case(case)
    ptx = compiled.asm["ptx"]
    assert compiled.metadata.launch_pdl and "griddepcontrol.launch_dependents" in ptx, case.name
    assert compiled.metadata.shared <= 232448, (case.name, compiled.metadata.shared)  # an H200 SM's shared memory
    # Nothing touches global memory before the wait; with early weights only loads (the first weight chunk).
    before = {m.group(0) for m in ACCESS.finditer(ptx[: ptx.index("griddepcontrol.wait")])}
    assert before == ({"ld.global"} if case.constexprs.get("EARLY_WEIGHTS") else set()), (case.name, before)
print("compiled")
"""


def test_every_launch_of_a_step_waits_before_it_touches_memory_when_compiled_for_sm90(tmp_path):
    """Every launch of the 1.7B talker service with programmatic launch on, the SiLU in the down projections too
    (tools/compare_kernel_code.py's recorded cases, specialized as Triton's launcher specializes them, so loads
    vectorize and pipeline as on the GPU), compiled for sm_90, with early weights and without: the kernel fits an H200
    SM's shared memory (run 171's early weights did not) and lets the next one in, and no global load, store, atomic
    or async copy comes before its wait; with early weights only the GEMMs' first weight chunk is loaded before it."""
    import dataclasses
    import json

    from omni.services.talker.config import TalkerConfig

    tool = load_tool("compare_kernel_code")
    launches = []
    for early in (False, True):
        settings = TalkerConfig(  # in every step: each launch with it
            programmatic_launch=True,
            programmatic_early_weights=early,
            skinny_linear_silu_down=True,
            programmatic_launch_max_rows=0,
        )
        launches += tool.talker_cases(settings)
    assert sum(case.constexprs.get("SILU_GATE", False) for case in launches) >= 4
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([dataclasses.asdict(case) for case in launches]))
    done = compile_for_sm90(COMPILE, tmp_path, str(TOOLS), str(cases))
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_the_chain_benchmark_runs_the_same_values_in_every_setting(switch):
    """tools/bench_pdl.py's chains (timed on a GPU): each runs its launches on one row and gives the same output
    whatever the setting (here early weights on and off: the interpreter runs no wait); an unknown chain is refused."""
    bench = load_tool("bench_pdl")
    for kind in ("norms", "norms+gemms"):
        run = bench.make_chain(kind, 6, 64, 2, "cpu", torch.float32)
        outputs = []
        for _, early in bench.SETTINGS.values():
            switch(False, early_weights=early)
            outputs.append(run())
        assert outputs[0].shape == (1, 64) and all(torch.equal(o, outputs[0]) for o in outputs), kind
    assert not torch.equal(bench.make_chain("norms", 6, 64, 2, "cpu", torch.float32)(),
                           bench.make_chain("norms+gemms", 6, 64, 2, "cpu", torch.float32)())  # fmt: skip
    with pytest.raises(ValueError, match="unknown chain"):
        bench.make_chain("gemms", 6, 64, 2, "cpu", torch.float32)
