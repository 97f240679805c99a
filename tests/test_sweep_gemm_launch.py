"""tools/sweep_gemm_launch.py's parts on the CPU: which launches it tries on a weight, which GEMMs it pins together,
and that pinning is undone (the timing itself needs a GPU)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest
import torch
from omni.kernels.skinny_linear import dot_launch, dot_launch_for

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels, module_launch, skinny_gemms, use_skinny_linear
from omni.models.qwen3_tts.tiny import tiny_config
from tests.tool_modules import load_tool


def tiny_talker(dot_32: bool = True) -> Qwen3TTSTalker:
    talker = Qwen3TTSTalker(Qwen3TTSConfig.parse(tiny_config("custom_voice")).talker).eval()
    fuse_talker_kernels(talker, add_norm=True)
    use_skinny_linear(talker, dot=True, by_shape=True, dot_32=dot_32)
    return talker


def test_candidates_fit_the_weight_and_leave_out_its_default():
    sweep = load_tool("sweep_gemm_launch")
    default = dot_launch_for(torch.empty(1024, 2048, device="meta"), split=True)  # split-K 4, 32 x 128
    tried = sweep.candidates_for((1024, 2048), default)
    assert default not in tried and len(tried) == len(sweep.CANDIDATES) - 1
    assert {"dot": True, "block_n": 16, "block_k": 512, "num_warps": 4, "num_stages": 3} in tried  # no split_k key
    narrow = sweep.candidates_for((32, 512), None)  # 64-wide blocks and 512-wide chunks split in 2 do not fit
    assert narrow and all(c["block_n"] <= 32 and 512 // c.get("split_k", 1) >= c["block_k"] for c in narrow)
    assert len(narrow) < len(sweep.CANDIDATES)
    assert sweep.label(default) == "32x128 w4 s4 k4"


def test_candidates_given_by_spec_replace_the_list_and_are_fitted_the_same_way():
    sweep, bench = load_tool("sweep_gemm_launch"), load_tool("bench_talker_step")
    tried = [bench.dot_spec(spec) for spec in ("128x64s4k1", "128x128s3k1", "32x128s4k4", "16x512s3k4")]
    assert tried[0] == {"dot": True, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4}
    assert tried[2]["split_k"] == 4 and "split_k" not in tried[1]
    assert sweep.candidates_for((1024, 1024), tried[2], tried) == tried[:2]  # the default out; 1024 / 4 < 512
    assert sweep.candidates_for((64, 4096), None, tried) == [tried[2], tried[3]]  # 128 features do not fit N = 64
    for bad in ("128x64s4", "128x64s0k1", "0x64s4k1", "pin-1024x2048-64x128s4k1"):
        with pytest.raises(ValueError, match="BNxBKsSkP"):
            bench.dot_spec(bad)


def test_shape_classes_hold_each_gemm_that_runs_the_kernels_once_by_shape():
    sweep = load_tool("sweep_gemm_launch")
    talker = tiny_talker()
    classes = sweep.shape_classes(talker, rows=16)
    pinned = [module for gemms in classes.values() for module, _ in gemms]
    running = [m for m, w, _ in skinny_gemms(talker).values() if module_launch(m, w, 16, interpreted=False)]
    assert sorted(map(id, pinned)) == sorted(map(id, running)) and len(pinned) == len(skinny_gemms(talker))
    assert all(tuple(w.shape) == shape for shape, gemms in classes.items() for _, w in gemms)
    sizes = [len(gemms) for gemms in classes.values()]
    assert sizes == sorted(sizes, reverse=True) and len(classes) > 1
    too_many = sweep.shape_classes(talker, rows=33)  # past every GEMM's skinny_rows: cuBLAS, nothing to pin
    assert too_many == {}
    sixteen = sweep.shape_classes(tiny_talker(dot_32=False), rows=17)
    assert sixteen == {}


def test_pin_sets_a_launch_and_none_restores_the_modules_own():
    sweep = load_tool("sweep_gemm_launch")
    talker = tiny_talker()
    shape, gemms = next(iter(sweep.shape_classes(talker, rows=16).items()))
    own = [module_launch(m, w, 16, interpreted=False) for m, w in gemms]
    launch = dot_launch(16, 256, 4, 4, 2)
    sweep.pin([m for m, _ in gemms], launch)
    assert all(module_launch(m, w, 16, interpreted=False) == launch for m, w in gemms)
    sweep.pin([m for m, _ in gemms], None)
    assert [module_launch(m, w, 16, interpreted=False) for m, w in gemms] == own != [launch] * len(gemms)


def test_the_sweep_times_the_defaults_the_bench_takes():
    sweep, bench = load_tool("sweep_gemm_launch"), load_tool("bench_talker_step")
    assert bench.parse_modes(sweep.DEFAULTS) == [sweep.DEFAULTS]
