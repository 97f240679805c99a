"""kernels/wide_linear.py (F.linear by output tiles, optionally with an MLP's SiLU(gate) * up in its epilogue) against
PyTorch, its argument checks, its sm_90 compile, and tools/bench_wide_linear.py's sides and summary; CPU, Triton
interpreter."""

import copy
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
import torch.nn.functional as F
from omni.kernels.tiles import Tiles
from omni.kernels.transformer_fused import silu_mul
from omni.kernels.wide_linear import wide_linear

from tests.kernel_runners import compile_for_sm90

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import bench_wide_linear  # noqa: E402

TILES = Tiles(32, 16, 32, 4, 2)
# (rows, N, K): ragged last tiles on every axis (M, N and K past a tile), more row tiles than GROUP_M's 8 so the
# grouped order wraps a band, one row, and K within one step.
SHAPES = [(70, 40, 48), (300, 24, 64), (1, 16, 32), (33, 48, 16)]


def _inputs(rows, n, k, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(rows, k, generator=gen).to(dtype), (torch.randn(n, k, generator=gen) / k**0.5).to(dtype)


@pytest.mark.parametrize("shape", SHAPES)
def test_wide_linear_is_f_linear_in_fp32(shape):
    x, w = _inputs(*shape, torch.float32, seed=sum(shape))
    got = wide_linear(x, w, TILES)
    want = F.linear(x, w)
    assert got.shape == want.shape and got.dtype == torch.float32
    assert (got - want).abs().max() <= 1e-5 * want.abs().max()


def test_wide_linear_in_bf16_is_the_exact_product_rounded_once():
    """bf16 inputs: fp32 sums of the exact products, one conversion to bf16, so within one bf16 ulp of the fp32
    product (the interpreter's conversion truncates, so not half an ulp)."""
    x, w = _inputs(70, 40, 48, torch.bfloat16, seed=1)
    got = wide_linear(x, w, TILES)
    exact = F.linear(x.float(), w.float())
    assert got.dtype == torch.bfloat16
    assert ((got.float() - exact).abs() <= exact.abs() * 2**-7).all()


def test_wide_linear_keeps_leading_dims_and_takes_a_strided_input():
    x, w = _inputs(24, 40, 48, torch.float32, seed=2)
    x3 = x.view(4, 6, 48)
    assert torch.equal(wide_linear(x3, w, TILES), wide_linear(x, w, TILES).view(4, 6, 40))
    wide = torch.cat([x, x], dim=1)[:, :48]  # rows 96 apart: not contiguous, but TMA can read them
    assert torch.equal(wide_linear(wide, w, TILES), wide_linear(x, w, TILES))


def test_wide_linear_rows_do_not_depend_on_the_other_rows():
    x, w = _inputs(70, 40, 48, torch.float32, seed=3)
    whole = wide_linear(x, w, TILES)
    assert torch.equal(wide_linear(x[37:38], w, TILES), whole[37:38])
    assert torch.equal(wide_linear(x[5:50], w, TILES), whole[5:50])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(70, 40, 48), (33, 24, 16)])  # I = 20 and 12: half-tiles past I read up rows
def test_gated_wide_linear_is_the_ungated_kernel_through_silu_mul(shape, dtype):
    x, w = _inputs(*shape, dtype, seed=4)
    got = wide_linear(x, w, TILES, gated=True)
    n = shape[1] // 2
    assert got.shape == (shape[0], n)
    plain = wide_linear(x, w, TILES)
    assert torch.equal(got, silu_mul(plain[:, :n], plain[:, n:]))
    exact = F.linear(x.float(), w.float())
    want = F.silu(exact[:, :n]) * exact[:, n:]
    assert (got.float() - want).abs().max() <= (1e-5 if dtype == torch.float32 else 2e-2) * want.abs().max()


def test_gated_wide_linear_takes_the_up_half_from_the_second_rows():
    """Swapping the halves changes the result: the gate is the first I rows and the up the last I."""
    x, w = _inputs(33, 24, 16, torch.float32, seed=5)
    swapped = torch.cat([w[12:], w[:12]])
    assert not torch.allclose(wide_linear(x, w, TILES, gated=True), wide_linear(x, swapped, TILES, gated=True))


def test_wide_linear_refuses_what_it_cannot_run():
    x, w = _inputs(8, 16, 32, torch.float32, seed=6)
    with pytest.raises(ValueError, match="weight"):
        wide_linear(x, w[:, :16].contiguous(), TILES)
    with pytest.raises(ValueError, match="weight"):
        wide_linear(x, w.bfloat16(), TILES)
    with pytest.raises(ValueError, match="odd"):
        wide_linear(x, w[:15], TILES, gated=True)
    x6, w6 = _inputs(8, 16, 6, torch.float32, seed=7)
    with pytest.raises(ValueError, match="16 bytes"):
        wide_linear(x6, w6, TILES)
    assert wide_linear(x[:0], w, TILES).shape == (0, 16)


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.wide_linear import _wide_linear_kernel

signature = {"x_desc": "tensordesc<bf16[128, 64]>", "w_desc": "tensordesc<bf16[64, 64]>", "y_ptr": "*bf16"}
signature |= {n: "i32" for n in ("M", "N", "K", "y_stride", "up_offset")}
signature |= {n: "constexpr" for n in ("GATED", "IEEE", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP")}
loads = []
for gated in (False, True):
    constexprs = {"GATED": gated, "IEEE": False, "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP": 8}
    compiled = compile(ASTSource(_wide_linear_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 4})
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx, "Hopper's warpgroup MMA"
    assert "cp.async.bulk.tensor" in ptx, "tensor-memory-accelerator loads"
    assert ("ex2.approx" in ptx) == gated, "the SiLU's exp only in the gated epilogue"
    loads.append(ptx.count("cp.async.bulk.tensor"))
assert loads[1] > loads[0], "the gated kernel loads the up tiles too"
print("compiled")
"""


def test_kernel_compiles_for_sm90_with_wgmma_and_tma(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_bench_sides_are_the_products_they_name():
    """The bench's wide sides on CPU (the cuBLAS sides need CUDA): each tile's plain side is F.linear, each gated side
    is its ungated kernel through silu_mul, and the gated sides replace the plain ones on a gate_up weight."""
    x, w = _inputs(40, 32, 32, torch.float32, seed=8)
    tiles = [Tiles(32, 16, 32, 4, 2), Tiles(16, 32, 16, 4, 2)]
    plain = bench_wide_linear.sides(w, tiles, gated=False)
    assert list(plain) == ["cuBLAS", "cuBLASLt", "32x16x32w4s2", "16x32x16w4s2"]
    exact = bench_wide_linear.exact_output(x, w, gated=False)
    for side in list(plain)[2:]:
        assert (plain[side](x, w, None) - exact).abs().max() <= 1e-5 * exact.abs().max()
    gated = bench_wide_linear.sides(w, tiles, gated=True)
    assert list(gated) == ["cuBLAS+silu_mul", "cuBLASLt+silu_mul", "gated 32x16x32w4s2", "gated 16x32x16w4s2"]
    exact = bench_wide_linear.exact_output(x, w, gated=True)
    assert torch.allclose(gated["cuBLAS+silu_mul"](x, w, None), exact, atol=1e-5)
    for side in list(gated)[2:]:
        got = gated[side](x, w, None)
        assert torch.equal(got, bench_wide_linear.ungated_then_silu_mul(x, w, side))
        assert (got - exact).abs().max() <= 1e-5 * exact.abs().max()


def test_bench_summary_picks_the_fastest_tile_against_cublas():
    rows = [
        {"weight": "o", "rows": 512, "gated": False, "side": "cuBLAS", "us": 10.0},
        {"weight": "o", "rows": 512, "gated": False, "side": "cuBLASLt", "us": 9.0},
        {"weight": "o", "rows": 512, "gated": False, "side": "64x64x64w4s4", "us": 8.0},
        {"weight": "o", "rows": 512, "gated": False, "side": "128x256x64w8s3", "error": "OutOfResources"},
        {"weight": "o", "rows": 512, "gated": False, "side": "128x128x64w4s4", "us": 12.0},
        {"weight": "g", "rows": 512, "gated": True, "side": "cuBLAS+silu_mul", "us": 20.0},
        {"weight": "g", "rows": 512, "gated": True, "side": "cuBLASLt+silu_mul", "us": 21.0},
        {"weight": "g", "rows": 512, "gated": True, "side": "gated 64x64x64w4s4", "us": 25.0},
    ]
    o, g = bench_wide_linear.summarize(rows)
    assert (o["cublas_us"], o["cublaslt_us"], o["best_tiles"], o["best_us"]) == (10.0, 9.0, "64x64x64w4s4", 8.0)
    assert o["best_over_cublas"] == 0.8
    assert (g["gated"], g["cublas_us"], g["best_tiles"]) == (True, 20.0, "gated 64x64x64w4s4")
    assert g["best_over_cublas"] == 1.25


def _fused_tiny_talker():
    from omni.models.qwen3_tts.config import Qwen3TTSConfig
    from omni.models.qwen3_tts.talker import Qwen3TTSTalker
    from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels, use_skinny_linear
    from omni.models.qwen3_tts.tiny import tiny_config

    talker = Qwen3TTSTalker(Qwen3TTSConfig.parse(tiny_config("custom_voice")).talker).eval()
    fuse_talker_kernels(talker, add_norm=True)
    use_skinny_linear(talker, dot=True, by_shape=True, dot_32=True)
    return talker


def _tables(talker):
    """Tiles for every bias-free GEMM shape of `talker`, and gated tiles for its MLPs' gate_up shapes."""
    from omni.models.qwen3_tts.talker import MLP
    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    gemms = skinny_gemms(talker).values()
    tiles = {tuple(w.shape): TILES for _, w, b in gemms if b is None}
    gated = {tuple(w.shape): Tiles(16, 16, 32, 4, 2) for m, w, _ in gemms if isinstance(m, MLP)}
    return tiles, gated, sum(b is None for _, _, b in gemms)


def _count_wide_calls(monkeypatch) -> list:
    from omni.models.qwen3_tts import talker_fused

    calls, real = [], talker_fused.wide_linear

    def counted(x, w, tiles, gated=False):
        calls.append((tuple(w.shape), gated))
        return real(x, w, tiles, gated)

    monkeypatch.setattr(talker_fused, "wide_linear", counted)
    return calls


def test_use_wide_linear_runs_the_tabled_gemms_from_their_rows(monkeypatch):
    """use_wide_linear(from_rows=34), past the skinny kernels' 32 rows (which keep their rows): a fused MLP of 33
    rows runs silu_mul after its gate_up GEMM, of 34 rows the gated kernel at its gated tiles (no silu_mul) and its
    down projection at the plain tiles, within fp32 reordering of the plain MLP; off again, no wide call and no
    attribute left."""
    from omni.models.qwen3_tts import talker_fused
    from omni.models.qwen3_tts.talker_fused import use_wide_linear

    plain = _fused_tiny_talker()
    wide = copy.deepcopy(plain)
    tiles, gated, bias_free = _tables(wide)
    assert use_wide_linear(wide, tiles, gated, from_rows=34) == bias_free
    mlp = wide.model.layers[0].mlp
    assert mlp.wide_gated_tiles == Tiles(16, 16, 32, 4, 2) and "wide_tiles" not in mlp.__dict__
    assert mlp.down_proj.wide_tiles == TILES and mlp.down_proj.wide_from == 34
    calls = _count_wide_calls(monkeypatch)
    silu_muls, real_silu_mul = [], talker_fused.silu_mul
    monkeypatch.setattr(talker_fused, "silu_mul", lambda g, u: silu_muls.append(1) or real_silu_mul(g, u))
    x = torch.randn(1, 34, wide.cfg.hidden_size, generator=torch.Generator().manual_seed(9))
    down_shape = tuple(mlp.down_proj.weight.shape)
    with torch.no_grad():
        want = plain.model.layers[0].mlp(x)
        calls.clear(), silu_muls.clear()
        assert torch.equal(wide.model.layers[0].mlp(x[:, :33]), plain.model.layers[0].mlp(x[:, :33]))
        assert not calls and len(silu_muls) == 2  # below from_rows: the plain path (and the plain MLP's)
        silu_muls.clear()
        got = mlp(x)
        assert calls == [(tuple(mlp.gate_up_weight.shape), True), (down_shape, False)] and not silu_muls
        assert (got - want).abs().max() <= 1e-5 * want.abs().max()
        assert use_wide_linear(wide, tiles, gated, on=False) == 0
        calls.clear()
        assert torch.equal(mlp(x), want) and not calls
    assert not any(k.startswith("wide_") for m in wide.modules() for k in m.__dict__)


def test_use_wide_linear_off_gives_linears_their_class_forward_unless_the_skinny_kernels_route_them():
    from omni.models.qwen3_tts.talker_fused import use_skinny_linear, use_wide_linear

    talker = _fused_tiny_talker()
    use_skinny_linear(talker, on=False)
    tiles, _, _ = _tables(talker)
    use_wide_linear(talker, tiles)
    linears = [m for m in talker.modules() if isinstance(m, torch.nn.Linear) and "wide_tiles" in m.__dict__]
    assert linears and all("forward" in m.__dict__ for m in linears)
    use_wide_linear(talker, tiles, on=False)
    assert not any("forward" in m.__dict__ for m in linears)
    use_skinny_linear(talker, dot=True)
    use_wide_linear(talker, tiles)
    use_wide_linear(talker, tiles, on=False)
    assert all("forward" in m.__dict__ for m in linears)  # the skinny kernels' forward kept


def test_use_wide_linear_without_gated_tiles_keeps_silu_mul_and_runs_the_plain_gate_up(monkeypatch):
    from omni.models.qwen3_tts.talker_fused import use_wide_linear

    plain = _fused_tiny_talker()
    wide = copy.deepcopy(plain)
    tiles, _, bias_free = _tables(wide)
    assert use_wide_linear(wide, tiles, from_rows=34) == bias_free
    calls = _count_wide_calls(monkeypatch)
    mlp = wide.model.layers[0].mlp
    with torch.no_grad():
        mlp(torch.randn(1, 34, wide.cfg.hidden_size))
    assert calls == [(tuple(mlp.gate_up_weight.shape), False), (tuple(mlp.down_proj.weight.shape), False)]


def test_decode_steps_through_the_wide_kernels_give_the_plain_codes(tiny_model_dir, monkeypatch):
    """A fused tiny talker with every GEMM and gated MLP on the wide kernels from 2 rows: decode steps of 2 slots (the
    predictor's first pass 4 rows) run them in every layer of both models, and give the plain fused talker's codes,
    with hidden states within fp32 reordering."""
    from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels, use_skinny_linear, use_wide_linear
    from omni.talker.generate import Synthesizer
    from omni.talker.model_runner import TalkerRunner
    from tests.kernel_runners import PREFILLED_SLOTS, prefill_two_requests

    synth = Synthesizer(tiny_model_dir("custom_voice"))
    plain = synth.model.talker
    fuse_talker_kernels(plain, add_norm=True)
    use_skinny_linear(plain, on=False)  # F.linear at every row count: the wide kernels take from 2 rows
    wide = copy.deepcopy(plain)
    tiles, gated, _ = _tables(wide)
    use_wide_linear(wide, tiles, gated, from_rows=2)
    calls = _count_wide_calls(monkeypatch)
    runners = [TalkerRunner(t, synth.model.config, 3, 64) for t in (plain, wide)]
    for runner in runners:
        prefill_two_requests(runner, synth)
    slots = torch.tensor(PREFILLED_SLOTS)
    for _ in range(3):
        want = runners[0].decode_step(slots)[0]
        calls.clear()
        assert torch.equal(runners[1].decode_step(slots)[0], want)
        gated_calls = sum(g for _, g in calls)
        assert gated_calls == len(plain.model.layers) + 15 * len(plain.code_predictor.model.layers)
    exact = runners[0].last_hidden
    assert (runners[1].last_hidden - exact).abs().max() <= 1e-4 * exact.abs().max()


def test_bench_tables_choose_the_fastest_tile_under_the_bound_and_load_back():
    """--tables-out: at the table's rows, each weight's fastest tile where it is at most the bound of cuBLAS's
    (gated ones apart); tables_from_json reads them back as the talker's tables."""
    from omni.kernels.wide_linear import tables_from_json

    summary = [
        {"shape": [1024, 2048], "rows": 512, "gated": False, "best_tiles": "64x64x64w4s4", "best_over_cublas": 0.8},
        {"shape": [1024, 2048], "rows": 128, "gated": False, "best_tiles": "64x128x64w4s4", "best_over_cublas": 0.5},
        {"shape": [4096, 1024], "rows": 512, "gated": False, "best_tiles": "128x128x64w4s4", "best_over_cublas": 0.99},
        {"shape": [6144, 1024], "rows": 512, "gated": True, "best_tiles": "gated 128x64x64w4s4",
         "best_over_cublas": 0.9},
        {"shape": [2048, 1024], "rows": 512, "gated": False, "best_tiles": None, "best_over_cublas": None},
    ]  # fmt: skip
    chosen = bench_wide_linear.tables(summary, rows=512, at_most=0.97)
    assert chosen == {"tiles": {"1024x2048": "64x64x64w4s4"}, "gated": {"6144x1024": "128x64x64w4s4"}}
    tiles, gated = tables_from_json(chosen)
    assert tiles == {(1024, 2048): Tiles(64, 64, 64, 4, 4)} and gated == {(6144, 1024): Tiles(128, 64, 64, 4, 4)}


def test_bench_talker_step_refuses_a_wide_mode_without_tiles(monkeypatch):
    """bench_talker_step: a +wide mode with both tables empty stops with a clear message (it would time the plain
    step under another name); with a table, or without a wide mode, it goes on."""
    import bench_talker_step
    from omni.kernels import wide_linear

    monkeypatch.setattr(wide_linear, "WIDE_TILES", {})
    monkeypatch.setattr(wide_linear, "WIDE_GATED_TILES", {})
    with pytest.raises(SystemExit, match="--wide-tiles"):
        bench_talker_step.check_wide_tables(["fused", "fused+sampler+wide-gated"])
    bench_talker_step.check_wide_tables(["fused", "fused+sampler"])
    monkeypatch.setattr(wide_linear, "WIDE_TILES", {(1024, 2048): TILES})
    bench_talker_step.check_wide_tables(["fused+wide"])
