"""tools/compare_kernel_code.py: the sm_90 SASS of the talker step's kernels from two trees of kernels/, compared on
the CPU (the Triton wheel's ptxas and nvdisasm)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # the step below runs its kernels on the CPU; the tool unsets it

import inspect
import json
import shutil
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from tests.tool_modules import TOOLS, load_tool

ROOT = TOOLS.parent
tool = load_tool("compare_kernel_code")
SNAPSHOT = ROOT / "kernels" / "timed_code.json"
# One case each among today's (a GEMM launch of the decode steps; a norm of the prefills, without programmatic launch)
ROW = (
    "_skinny_linear_kernel HAS_BIAS=False SILU_GATE=False BLOCK_N=4 BLOCK_K=1024 EARLY_WEIGHTS=False PDL=True "
    "num_warps=2"
)
NORM = "_rms_norm_kernel BLOCK=2048 PDL=False num_warps=4"


def triton_version() -> str:
    import triton

    return triton.__version__


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """A copy of this tree's kernels/, and one whose weight chunks are masked one column too far (k <= K)."""
    trees = {}
    for name, planted in (("copy", False), ("planted", True)):
        root = tmp_path_factory.mktemp(name)
        shutil.copytree(ROOT / "kernels", root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
        if planted:
            source = root / "kernels" / "skinny_linear.py"
            text = source.read_text()
            assert text.count("    k_ok = k < K\n") == 1
            source.write_text(text.replace("    k_ok = k < K\n", "    k_ok = k <= K\n"))
        trees[name] = str(root)
    return trees


def test_a_tree_against_its_copy_is_the_same_code(trees):
    rows = tool.compare(trees["copy"], str(ROOT), only=ROW) + tool.compare(trees["copy"], str(ROOT), only=NORM)
    assert len(rows) == 2 and ROW in rows[0]["case"] and NORM in rows[1]["case"], rows
    assert all(row["verdict"] == "same" and row["base"] == row["new"] > 100 for row in rows), rows
    assert all(row["registers"][0] == row["registers"][1] > 16 and row["spills"] == [0, 0] for row in rows), rows


def test_a_changed_kernel_differs_and_the_others_do_not(trees):
    (row,) = tool.compare(str(ROOT), trees["planted"], only=ROW)
    assert row["verdict"] == "differs", row
    (norm,) = tool.compare(str(ROOT), trees["planted"], only=NORM)
    assert norm["verdict"] == "same", norm
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "compare_kernel_code.py"), "--base", str(ROOT), "--new",
         trees["planted"], "--only", ROW, "--check"], capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1 and "differs" in done.stdout, done.stdout + done.stderr[-2000:]


def test_a_git_revision_is_a_base():
    """HEAD's kernels/ (git archive) against the working tree: compiles both sides (a change not yet committed may make
    it differ, so only that both compiled is asserted)."""
    (row,) = tool.compare("HEAD", str(ROOT), only=NORM)
    assert row["verdict"] in ("same", "registers", "reordered", "differs") and row["base"] > 100, row


def test_the_verdicts():
    base = ["IMAD R1, R2, R3, RZ", "LDG.E R4, desc[UR4][R2.64]", "FADD R5, R4.reuse, R1"]

    def verdict(new: list[str]) -> str:
        return tool.verdict(tool.digests(base), tool.digests(new))

    assert verdict(list(base)) == "same"
    assert verdict(["IMAD R7, R2, R3, RZ", "LDG.E R4, desc[UR6][R2.64]", "FADD R5, R4.reuse, R7"]) == "registers"
    assert verdict([base[1], base[0], "FADD R5, R4, R1"]) == "reordered"
    assert verdict(base[:2] + ["FMUL R5, R4, R1"]) == "differs"
    assert verdict(base + ["NOP"]) == "differs"
    assert tool.spills(base + ["STL [R1+0x8], R4", "@P0 LDL.64 R2, [R1]", "@!P1 LDG.E R3, desc[UR4][R2.64]"]) == 2


def test_a_snapshot_is_a_base(trees, tmp_path):
    """A snapshot of a tree compares as the tree itself: the same against it, the planted tree differs from it."""
    snapshot = tmp_path / "snapshot.json"
    tool.snapshot(snapshot, trees["copy"], only=ROW)
    saved = json.loads(snapshot.read_text())
    assert saved["triton"] == triton_version()
    assert list(saved["cases"]) == [case.name for case in tool.talker_cases() if ROW in case.name]
    (same,) = tool.compare(str(snapshot), str(ROOT), only=ROW)
    (planted,) = tool.compare(str(snapshot), trees["planted"], only=ROW)
    assert same["verdict"] == "same" and planted["verdict"] == "differs", (same, planted)


def test_the_step_kernels_compile_to_the_snapshot_of_the_timed_code():
    """kernels/timed_code.json holds the code of every case as last timed on a GPU (compiled by this machine's
    Triton). A change to kernels/ that changes a default launch's code fails here: time it on a GPU first (or say why
    not), then write the snapshot again: python tools/compare_kernel_code.py --write-snapshot kernels/timed_code.json"""
    saved = json.loads(SNAPSHOT.read_text())
    assert saved["triton"] == triton_version(), "the snapshot was compiled by another Triton: write it again"
    names = [case.name for case in tool.all_cases()]
    assert names == list(saved["cases"]), "the cases changed: write the snapshot again"
    rows = tool.compare(str(SNAPSHOT), str(ROOT))
    assert all(row["verdict"] == "same" for row in rows), [
        (r["case"], r["verdict"]) for r in rows if r["verdict"] != "same"
    ]


def test_the_cases_cover_every_kernel_a_decode_step_launches(monkeypatch):
    """The tiny talker as the service builds it on a GPU: every Triton kernel its decode step launches has a case,
    recorded from the 1.7B talker's decode steps, prefills and prompt embeddings."""
    from tests.test_programmatic_launch import step_launches

    runner = load_tool("census_talker_step").build("tiny", 2, rope_per_forward=False)
    launched = {name for name, _, _ in step_launches(runner, False, monkeypatch)}
    talker = tool.talker_cases()
    assert len(launched) >= 8 and launched <= {case.kernel for case in talker}, launched
    assert all(case.tag.startswith("talker") for case in talker)


def test_the_talker_cases_hold_the_prefills_and_the_prompt_embeddings():
    """Beyond the decode steps (1 position a slot: T a constant 1): the prefill graphs' launches (T a multiple of 16;
    above 64 rows without programmatic launch) and the prompt embedding's GEMMs (outside a step: without it; the text
    projection's bias), each with the pointer types of its launch; with the deployed profile's, the larger decode
    steps'; and the 0.6B talker's."""
    talker = tool.talker_cases()
    writes = [case for case in talker if case.kernel == "_norm_rope_write_kernel"]
    assert any(case.values.get("T") == 1 for case in writes)
    assert any("T" not in case.values and not case.constexprs["PDL"] for case in writes), [c.name for c in writes]
    outside = [case for case in talker if case.module == "skinny_linear" and not case.constexprs["PDL"]]
    assert any(case.constexprs["HAS_BIAS"] for case in outside), [case.name for case in outside]
    attention = [case for case in talker if case.kernel == "_decode_attention_kernel"]
    assert len(attention) == 3 and all(case.types["lengths_ptr"] == "*i64" for case in attention)
    # the backbone's, and the code predictor's at 1 position a slot and at 2 (its first pass: a slot for 2 rows)
    assert sorted(case.constexprs["ROWS_PER_SLOT"] for case in attention) == [1, 1, 2]
    # The chart's profile (256 streams) adds decode steps above 64 rows: their attention without programmatic launch
    deployed = [case for case in tool.all_cases() if case.kernel == "_decode_attention_kernel"]
    assert len(deployed) == 6 and {case.constexprs["PDL"] for case in deployed} == {True, False}
    # and the 0.6B talker's shapes, launches of their own
    small, every = {case.name for case in tool.talker_cases(model="0.6B")}, {case.name for case in tool.all_cases()}
    assert small <= every and small - {case.name for case in talker}


def test_the_codec_cases_cover_every_kernel_a_codec_step_launches():
    """The tiny decoder as the codec service builds it on a GPU, stepped under the interpreter (census_codec_step):
    every Triton kernel it launches has a codec case, recorded from the released-shape decoder's steps."""
    census = load_tool("census_codec_step")
    decoder = census.build(tiny=True, on=[], off=[])
    state = decoder.new_state(3)
    codes = torch.randint(0, decoder.cfg.codebook_size, (2, 4, decoder.cfg.num_quantizers))
    rows, frames = torch.arange(2), torch.full((2,), 4)
    with torch.no_grad():
        counted = census.census(lambda: census.codec_step(decoder, state, codes, rows, frames), census.OpCounter())
    codec = [case for case in tool.codec_cases() if case.tag.startswith("codec")]
    # the tiny decoder's 4-channel units close with bias_residual_cl: too narrow for conv2's GEMM (vocoder_conv.fits),
    # which closes every unit of the released decoder
    narrow = {"_bias_residual_cl_kernel"}
    assert len(codec) == len(tool.codec_cases()) >= 10
    assert set(counted["launches"]) - narrow == {case.kernel for case in codec}


def test_the_codec_cases_follow_the_graphs_captured():
    """With one graph (1 stream x 1 frame) the recorded cases are some of the defaults' (those of 28 graphs and the
    eager steps): the recording steps the graphs the settings capture."""
    from omni.services.codec.config import CodecConfig

    one = tool.codec_cases(CodecConfig(dtype="bfloat16", graph_batch_buckets=[1], graph_chunk_lengths=[1]))
    defaults = {case.name for case in tool.codec_cases()}
    assert {case.name for case in one} < defaults


@triton.jit
def _specialized_kernel(x_ptr, codes_ptr, n, length, stride, scale, flag, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(codes_ptr).to(tl.bfloat16) * scale + n + length + stride + flag)


def test_a_launch_becomes_the_case_the_launcher_would_compile():
    """case_from_launch: a tensor a pointer of its dtype (a view off the 16-byte grid keeps its address modulo 16; a
    bool tensor *u1, as Triton's launcher has it), an integer of 1 a constant, one not a multiple of 16 by value, a
    float fp32, a bool u1, constexprs by value; the name says each; `signature` then marks exactly the aligned
    pointers and the multiples of 16 divisible."""
    x, codes = torch.zeros(64, dtype=torch.bfloat16), torch.zeros(8, dtype=torch.long)
    case = tool.case_from_launch(_specialized_kernel, (x, codes[1:], 32, 1, 7, 0.5, True), {"BLOCK": 64,
                                 "num_warps": 2}, "test")  # fmt: skip
    assert case.kernel == "_specialized_kernel" and case.constexprs == {"BLOCK": 64}
    assert case.options == {"num_warps": 2}
    assert case.types == {"codes_ptr": "*i64", "scale": "fp32", "flag": "u1"}
    assert case.values == {"codes_ptr": 8, "length": 1, "stride": 7}
    assert case.name == ("_specialized_kernel BLOCK=64 num_warps=2 [test; 1: length; not /16: codes_ptr,stride; "
                         "types: codes_ptr=*i64,scale=fp32,flag=u1]")  # fmt: skip
    params = list(inspect.signature(_specialized_kernel.fn).parameters)
    types, constexprs, attrs = tool.signature(params, case)
    assert constexprs == {"length": 1, "BLOCK": 64} and types["codes_ptr"] == "*i64" and types["n"] == "i32"
    assert sorted(index for (index,) in attrs) == [params.index("x_ptr"), params.index("n")]
    aligned = tool.case_from_launch(_specialized_kernel, (x, codes, 32, 16, 48, 0.5, False), {"BLOCK": 64}, "test")
    assert aligned.values == {} and aligned.name != case.name
    flags = tool.case_from_launch(_specialized_kernel, (x, codes.bool(), 32, 16, 48, 0.5, False), {"BLOCK": 64}, "t")
    assert flags.types["codes_ptr"] == "*u1"


def test_a_case_is_specialized_as_the_launcher_specializes_it():
    """Pointers and integers that are multiples of 16 are marked divisible by 16, an integer of 1 becomes a constant,
    the off options a kernel has are constants and those it lacks are left out."""
    case = tool.Case("m", "k", {"BLOCK": 8}, types={"eps": "fp32"}, values={"T": 1, "rows": 12})
    params = ["x_ptr", "T", "n", "rows", "eps", "BLOCK", "PDL"]
    types, constexprs, attrs = tool.signature(params, case)
    assert constexprs == {"BLOCK": 8, "T": 1, "PDL": False}
    assert types == {"x_ptr": "*bf16", "T": "constexpr", "n": "i32", "rows": "i32", "eps": "fp32",
                     "BLOCK": "constexpr", "PDL": "constexpr"}  # fmt: skip
    assert attrs == {(0,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]}


def without_pdl(name: str) -> str:
    """A case's name as the same launch would have it without programmatic launch."""
    return name.replace("PDL=True", "PDL=False").replace("launch_pdl=True", "launch_pdl=False")


def test_the_cases_follow_the_settings():
    """Every option off: no option in any case. Today's defaults (programmatic launch in steps of at most 64 rows):
    the decode steps' launches with it, the wider prefills' and the prompt embeddings' without, and nothing else
    changes (each case is one of the launches without it). With the SiLU in the down projections and programmatic
    launch everywhere with early weights: every launch waits for the kernels ahead (launch_pdl), the GEMMs load their
    first weights early, some down projections take the gate/up output; with the SiLU bounded to 1-row forwards only
    row-kernel launches do."""
    from omni.services.talker.config import TalkerConfig

    options = ("PDL", "EARLY_WEIGHTS", "SILU_GATE")
    off = tool.talker_cases(TalkerConfig(programmatic_launch=False))
    assert not any(case.constexprs.get(key) for case in off for key in options)
    assert all(not case.options.get("launch_pdl") for case in off)
    defaults = tool.talker_cases()
    with_it = [case for case in defaults if case.constexprs.get("PDL")]
    assert all(case.options["launch_pdl"] for case in with_it)
    assert {without_pdl(case.name) for case in defaults} == {case.name for case in off}
    kernels = {case.kernel for case in defaults}
    both = {case.kernel for case in with_it} & {case.kernel for case in defaults if not case.constexprs.get("PDL")}
    assert {"_rms_norm_kernel", "_add_rms_norm_kernel", "_silu_mul_kernel", tool.ROW, tool.DOT} <= both < kernels
    settings = TalkerConfig(
        skinny_linear_silu_down=True,
        programmatic_launch=True,
        programmatic_early_weights=True,
        programmatic_launch_max_rows=0,
    )
    cases = tool.talker_cases(settings)
    assert all(case.constexprs["PDL"] and case.options["launch_pdl"] for case in cases)
    gemms = [case for case in cases if case.module == "skinny_linear"]
    assert all(case.constexprs["EARLY_WEIGHTS"] for case in gemms)
    assert not any("EARLY_WEIGHTS" in case.constexprs for case in cases if case.module != "skinny_linear")
    gated = [case for case in gemms if case.constexprs.get("SILU_GATE")]
    assert 0 < len(gated) < len(gemms), [case.name for case in gated]
    assert {case.constexprs.get("SPLIT_K", 1) for case in gated} == {1, 4}  # the row launches and split-K (K >= 2N)
    # skinny_linear_silu_down_max_rows 1: only the row kernel's 1-row launches take the gate/up output
    one_row = tool.talker_cases(TalkerConfig(skinny_linear_silu_down=True, skinny_linear_silu_down_max_rows=1))
    gated_one = [case for case in one_row if case.constexprs.get("SILU_GATE")]
    assert gated_one and all(case.kernel == tool.ROW for case in gated_one)
    assert any(case.kernel == tool.DOT for case in gated)  # without the bound the dot launches take it too
