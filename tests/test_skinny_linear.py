"""kernels/skinny_linear.py (F.linear for a few rows) and the talker's `use_skinny_linear` switch.

On CPU through the Triton interpreter; `tools/bench_talker_step.py` mode `+skinny-linear` times it on the GPU and
checks it against cuBLAS there."""

import copy
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernel runs on CPU tensors

import pytest
import torch
import torch.nn.functional as F
import triton
from omni.kernels.skinny_linear import (
    KERNEL_MAX_ROWS,
    LAUNCH,
    LAUNCH_DOT_INTERPRETED,
    LAUNCH_INTERPRETED,
    MAX_ROWS,
    SPLIT_FREE_FROM,
    dot_from_for,
    dot_launch_for,
    dot_rows_for,
    launch_fitting,
    launch_for,
    max_rows_for,
    row_launch_for,
    skinny_linear,
)
from omni.kernels.transformer_fused import silu_mul

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels, skinny_gemms, use_silu_down, use_skinny_linear
from omni.models.qwen3_tts.tiny import tiny_config
from tests.kernel_runners import compile_for_sm90

DOT = {"dot": True, "block_n": 32, "block_k": 128, "num_warps": 4}  # the dot kernel; K of 2048 spans 16 chunks
SPLIT = {**DOT, "split_k": 3}  # K shared by 3 programs a feature block (2048 = 6 + 6 + 4 chunks)


def operands(rows: int, k: int, n: int, dtype: torch.dtype, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=gen).to(dtype)
    w = (torch.randn(n, k, generator=gen) / k**0.5).to(dtype)
    b = torch.randn(n, generator=gen).to(dtype)
    return x, w, b


def reference(x, w, b=None):
    """The exact sums (float64), rounded once to x's dtype: what fp32 accumulation approaches."""
    y = x.double() @ w.double().T + (b.double() if b is not None else 0)
    return y.to(x.dtype)


@pytest.mark.parametrize("rows", [1, 2, 3, 5, MAX_ROWS])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("launch", [None, LAUNCH, DOT, SPLIT], ids=["interpreted", "gpu_launch", "dot", "split_k"])
def test_a_few_rows_are_the_exact_sums_rounded_once(rows, bias, launch):
    x, w, b = operands(rows, 2048, 70, torch.bfloat16)  # 70: the last program's block partly outside N
    b = b if bias else None
    got, want = skinny_linear(x, w, b, launch=launch), reference(x, w, b)
    assert got.shape == (rows, 70) and got.dtype == torch.bfloat16
    ulp = (want.float().abs() * 2**-7).clamp_min(2**-126)  # one bf16 step at the value's magnitude
    # fp32 sums: at most one step from the exact ones (the interpreter truncates to bf16; the GPU rounds to nearest)
    assert ((got.float() - want.float()).abs() <= ulp).all()
    cublas_like = F.linear(x.float(), w.float(), b.float() if bias else None).to(torch.bfloat16)
    assert ((got.float() - cublas_like.float()).abs() <= ulp).all()


@pytest.mark.parametrize("launch", [None, DOT], ids=["row", "dot"])
def test_fp32_and_leading_dims_and_row_strides(launch):
    x, w, b = operands(6, 300, 20, torch.float32)  # K not a multiple of the block: masked columns
    wide = torch.zeros(6, 400)
    wide[:, :300] = x
    got = skinny_linear(wide[:, :300].reshape(2, 3, 300), w, b, launch=launch)  # rows 400 apart, two leading dims
    assert got.shape == (2, 3, 20)
    torch.testing.assert_close(got.reshape(6, 20), F.linear(x, w, b), rtol=1e-5, atol=1e-5)
    transposed = x.T.contiguous().T  # stride(-1) != 1: copied first
    torch.testing.assert_close(skinny_linear(transposed, w, launch=launch), F.linear(x, w), rtol=1e-5, atol=1e-5)


def test_a_rows_bits_do_not_depend_on_the_other_rows():
    """A program per row: row i of a MAX_ROWS-row call has the bits of row i alone (the batch a request shares a step
    with does not change its codes), at any launch setting."""
    x, w, b = operands(MAX_ROWS, 1000, 40, torch.bfloat16, seed=3)
    for launch in (None, LAUNCH):
        together = skinny_linear(x, w, b, launch=launch)
        for i in range(MAX_ROWS):
            assert torch.equal(together[i], skinny_linear(x[i : i + 1], w, b, launch=launch)[0]), (launch, i)


def test_a_rows_bits_do_not_depend_on_the_other_rows_values_in_the_dot_kernel():
    """The dot kernel multiplies all rows at once (padded to 16): row i's bits are the same whatever the other rows
    hold, with the same number of rows (each MMA output is its own row times its own column)."""
    x, w, b = operands(MAX_ROWS, 1000, 40, torch.bfloat16, seed=3)
    together = skinny_linear(x, w, b, launch=DOT)
    other = operands(MAX_ROWS, 1000, 40, torch.bfloat16, seed=4)[0]
    for i in range(MAX_ROWS):
        mixed = other.clone()
        mixed[i] = x[i]
        assert torch.equal(skinny_linear(mixed, w, b, launch=DOT)[i], together[i]), i
    assert not torch.equal(skinny_linear(other, w, b, launch=DOT), together)  # the other rows did change


def test_split_k_sums_the_shares_in_order_and_leaves_its_tickets_at_zero():
    """split_k: the programs of a feature block each sum a share of K; the last to take its ticket adds the shares in
    share order (the same bits every call, whichever finished last) and sets the ticket back to 0 for the next call.
    Shares past K (K of 300 in 128-wide chunks, 4 shares) add zeros."""
    from omni.kernels.skinny_linear import _TICKETS, TICKETS, split_tickets

    for k, split in ((2048, 2), (2048, 3), (300, 4)):
        x, w, b = operands(5, k, 70, torch.float32, seed=k + split)
        launch = {**DOT, "split_k": split}
        got = skinny_linear(x, w, b, launch=launch)
        torch.testing.assert_close(got, F.linear(x, w, b), rtol=1e-5, atol=1e-5)
        assert torch.equal(skinny_linear(x, w, b, launch=launch), got)
        assert not _TICKETS[torch.device("cpu")].any(), (k, split)
    x, w, b = operands(MAX_ROWS, 1000, 40, torch.bfloat16, seed=3)
    together, other = skinny_linear(x, w, b, launch=SPLIT), operands(MAX_ROWS, 1000, 40, torch.bfloat16, seed=4)[0]
    other[2] = x[2]
    assert torch.equal(skinny_linear(other, w, b, launch=SPLIT)[2], together[2])  # a row's bits, other rows apart
    with pytest.raises(ValueError, match="tickets"):
        split_tickets(torch.device("cpu"), TICKETS + 1)


def test_more_than_16_rows_pad_to_the_next_power_of_two_in_the_dot_kernel():
    """Above MAX_ROWS (the talker's) a call asking for it takes up to KERNEL_MAX_ROWS rows: the dot kernel pads 40
    rows to 64 and 128 to 128 (tools/bench_skinny_linear.py times them); the exact sums, rounded once."""
    for rows in (40, KERNEL_MAX_ROWS):
        x, w, b = operands(rows, 300, 20, torch.float32, seed=rows)
        got = skinny_linear(x, w, b, max_rows=rows, launch=DOT)
        torch.testing.assert_close(got, F.linear(x, w, b), rtol=1e-5, atol=1e-5)
        assert not torch.equal(
            got[rows // 2 :], torch.zeros_like(got[rows // 2 :])
        )  # the later half of the rows written too


def test_more_rows_than_max_are_f_linear_itself():
    x, w, b = operands(MAX_ROWS + 1, 64, 16, torch.bfloat16)
    assert torch.equal(skinny_linear(x, w, b), F.linear(x, w, b))


def test_bad_operands_are_refused():
    x, w, b = operands(2, 64, 16, torch.float32)
    with pytest.raises(ValueError, match="contiguous"):
        skinny_linear(x, w.T.contiguous().T)
    with pytest.raises(ValueError, match="bias must be"):
        skinny_linear(x, w, b[:8])
    with pytest.raises(ValueError, match="share a dtype"):
        skinny_linear(x, w.to(torch.bfloat16))


def test_the_switch_sets_every_gemm_and_takes_them_back():
    """use_skinny_linear: every GEMM the fused step runs (the Linears it still calls, the fused q/k/v and gate/up)
    gets `max_rows_for` its weight; the predictor's [hidden, 2 x hidden] o_proj goes through the kernel up to that
    many rows and F.linear above; off, everything is as before, bit for bit."""
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    torch.manual_seed(0)
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    predictor = talker.code_predictor
    o_proj = predictor.model.layers[0].self_attn.o_proj
    attention, mlp = talker.model.layers[0].self_attn, talker.model.layers[0].mlp
    gemms = skinny_gemms(talker)
    assert gemms["model.layers.0.self_attn.qkv_weight"] == (attention, attention.qkv_weight, None)
    assert gemms["model.layers.0.mlp.gate_up_weight"] == (mlp, mlp.gate_up_weight, None)
    assert "model.layers.0.self_attn.q_proj.weight" not in gemms  # a view the fused GEMM multiplies by instead
    assert "model.layers.0.mlp.up_proj.weight" not in gemms
    assert gemms["code_predictor.model.layers.0.self_attn.o_proj.weight"][0] is o_proj
    plain = copy.deepcopy(talker)
    with torch.no_grad():
        h = torch.randn(1, 2, config.talker.hidden_size)
        before = [plain.code_predictor.proj(h), plain.model.layers[0].mlp(h)]
    assert use_skinny_linear(talker) == len(gemms)
    assert all(m.skinny_rows == max_rows_for(w) for m, w, _ in gemms.values())
    assert talker.codec_head.skinny_rows == 1 and o_proj.skinny_rows == 4  # [3072, 64] and [48, 48] weights
    assert all("forward" in m.__dict__ for m, _, _ in gemms.values() if isinstance(m, torch.nn.Linear))
    for rows in (1, o_proj.skinny_rows, o_proj.skinny_rows + 1):
        x = torch.randn(rows, o_proj.in_features)
        through = skinny_linear if rows <= o_proj.skinny_rows else F.linear
        assert torch.equal(o_proj(x), through(x, o_proj.weight)), rows
    with torch.no_grad():  # the predictor's projection and an MLP (its gate/up fused) within rounding of cuBLAS's
        torch.testing.assert_close(talker.code_predictor.proj(h), before[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(talker.model.layers[0].mlp(h[:, :1]), before[1][:, :1], rtol=1e-5, atol=1e-5)
    assert use_skinny_linear(talker, on=False) == len(gemms)
    assert not any("skinny_rows" in m.__dict__ for m, _, _ in gemms.values())
    assert not any("forward" in m.__dict__ for m in talker.modules() if isinstance(m, torch.nn.Linear))
    with torch.no_grad():
        assert torch.equal(talker.code_predictor.proj(h), before[0])
        assert torch.equal(talker.model.layers[0].mlp(h), before[1])


def test_the_switch_with_dot_takes_every_gemm_up_to_max_rows_through_the_dot_kernel():
    """use_skinny_linear(dot=True): every GEMM up to MAX_ROWS rows, the row kernel below `dot_from_for` its weight
    and the dot kernel from there; off again, no attribute is left behind."""
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    torch.manual_seed(0)
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    gemms = skinny_gemms(talker)
    assert use_skinny_linear(talker, dot=True) == len(gemms)
    assert all(m.skinny_rows == MAX_ROWS and m.skinny_dot_from == dot_from_for(w) for m, w, _ in gemms.values())
    o_proj = talker.code_predictor.model.layers[0].self_attn.o_proj  # [48, 48]: the row kernel up to 4 rows
    assert o_proj.skinny_dot_from == 5
    x = torch.randn(4, o_proj.in_features)
    assert torch.equal(o_proj(x), skinny_linear(x, o_proj.weight))
    head = talker.codec_head  # [3072, 64]: one row only without dot
    for rows in (1, 3, MAX_ROWS):
        x = torch.randn(rows, head.in_features)
        launch = None if rows == 1 else LAUNCH_DOT_INTERPRETED
        assert torch.equal(head(x), skinny_linear(x, head.weight, launch=launch)), rows
    x = torch.randn(3, head.in_features)
    assert not torch.equal(head(x), skinny_linear(x, head.weight))  # the two kernels sum in other orders
    use_skinny_linear(talker)  # dot off again: max_rows_for and no dot
    assert head.skinny_rows == 1 and not any("skinny_dot_from" in m.__dict__ for m, _, _ in gemms.values())
    use_skinny_linear(talker, dot=True)
    use_skinny_linear(talker, on=False)
    assert not any({"skinny_rows", "skinny_dot_from"} & m.__dict__.keys() for m, _, _ in gemms.values())


def test_the_dot_launch_and_its_rows_by_weight():
    """Run 159's fastest dot launch by N; the rows the row kernel keeps below it (4 at N <= 1024, 2 at N <= 2048)."""

    def weight(n, k):
        return torch.empty(n, k)

    assert [dot_from_for(weight(n, 2048)) for n in (48, 1024, 1025, 2048, 3072, 12288)] == [5, 5, 3, 3, 2, 2]
    launches = [dot_launch_for(weight(n, k)) for n, k in ((1024, 3072), (2048, 6144), (4096, 1024), (6144, 1024),
                                                          (12288, 2048))]  # fmt: skip
    assert [(d["block_n"], d["block_k"], d["num_stages"]) for d in launches] == [
        (16, 512, 3), (16, 512, 3), (32, 256, 4), (64, 256, 4), (64, 128, 4)]  # fmt: skip
    assert all(d["dot"] and d["num_warps"] == 4 for d in launches)
    x, w, b = operands(7, 2048, 4100, torch.bfloat16)  # a [4100, 2048] weight: 64-feature blocks, one partial
    want = reference(x, w, b)
    got = skinny_linear(x, w, b, launch=dot_launch_for(w))
    assert ((got.float() - want.float()).abs() <= (want.float().abs() * 2**-7).clamp_min(2**-126)).all()


def test_launches_by_shape():
    """Run 162's launches by shape: the row kernel's (4 / 2048 / 4 warps at K >= 2N, else 2 / 1024 / 1 warp), the dot
    kernel's split-K at K >= 2N only, and which a call without a launch takes (by_shape or not; the interpreter's
    wide blocks whatever the shape). Both split-K and the deep row launch give the exact sums rounded once."""

    def weight(n, k):
        return torch.empty(n, k)

    deep, wide = weight(1024, 2048), weight(2048, 2048)  # K = 2N (the predictor's o_proj); K = N
    assert row_launch_for(deep) == {"block_n": 4, "block_k": 2048, "num_warps": 4}
    assert row_launch_for(weight(2048, 6144))["block_k"] == 2048 and row_launch_for(weight(1025, 2048))["block_n"] == 2
    assert row_launch_for(wide) == {"block_n": 2, "block_k": 1024, "num_warps": 1}
    assert dot_launch_for(deep, split=True) == {"dot": True, "block_n": 32, "block_k": 128, "num_warps": 4,
                                                "num_stages": 4, "split_k": 4}  # fmt: skip
    # From SPLIT_FREE_FROM rows, N <= 1024 and 2N <= K < 3N without split-K (run 185); not at 3N, nor N > 1024
    free = {"dot": True, "block_n": 64, "block_k": 128, "num_warps": 4, "num_stages": 4}
    assert dot_launch_for(deep, split=True, rows=SPLIT_FREE_FROM) == dot_launch_for(deep, True, 32) == free
    assert dot_launch_for(deep, split=True, rows=SPLIT_FREE_FROM - 1) == dot_launch_for(deep, split=True)
    shapes = ((1024, 3072), (1025, 2050), (512, 1024), (512, 1535))
    assert [dot_launch_for(weight(n, k), True, 16).get("split_k") for n, k in shapes] == [4, 4, None, None]
    assert dot_launch_for(deep, rows=16) == dot_launch_for(deep)  # without split: by N alone
    assert launch_for(deep, 9, dot_from=5, by_shape=True, interpreted=False) == free
    assert launch_for(deep, 8, dot_from=5, by_shape=True, interpreted=False) == dot_launch_for(deep, split=True)
    assert dot_launch_for(deep) == dot_launch_for(wide) == {**dot_launch_for(wide, split=True)}
    assert "split_k" not in dot_launch_for(wide, split=True) and "split_k" not in dot_launch_for(weight(1025, 2048))
    gpu = dict(dot_from=3, interpreted=False)
    assert launch_for(deep, 1, **gpu) == LAUNCH and launch_for(deep, 1, by_shape=True, **gpu) == row_launch_for(deep)
    assert launch_for(deep, 2, **gpu) == launch_for(deep, 2, by_shape=True, **gpu) == LAUNCH  # 1 row only
    assert launch_for(deep, 3, **gpu) == dot_launch_for(deep)
    assert launch_for(deep, 3, by_shape=True, **gpu) == dot_launch_for(deep, split=True)
    assert launch_for(deep, 16, by_shape=True, interpreted=False) == LAUNCH  # no dot_from: no dot
    assert launch_for(deep, 3, dot_from=3, by_shape=True, interpreted=True) == LAUNCH_DOT_INTERPRETED
    assert launch_for(deep, 2, dot_from=3, by_shape=True, interpreted=True) == LAUNCH_INTERPRETED
    for rows, launch in ((1, row_launch_for(deep)), (3, row_launch_for(deep)), (16, dot_launch_for(deep, split=True))):
        x, w, b = operands(rows, 2048, 70, torch.bfloat16, seed=rows)
        got, want = skinny_linear(x, w, b, launch=launch), reference(x, w, b)
        assert ((got.float() - want.float()).abs() <= (want.float().abs() * 2**-7).clamp_min(2**-126)).all(), rows


def test_a_call_takes_the_launch_of_its_padded_bucket():
    """Every GEMM weight of the 1.7B step at every row count up to 64 (and twice that, the code predictor's first
    pass: two positions a slot): the launch of n rows is the launch of the power-of-2 bucket n pads to in a CUDA graph,
    so the unpadded step sums as the padded one (bench_talker_step's codes_equal_to_unpadded_eager; a threshold of 16
    rows broke it in run 185)."""
    shapes = [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072), (2048, 1024), (4096, 2048), (2048, 2048),
              (12288, 2048), (2048, 6144), (3072, 2048)]  # fmt: skip
    for n, k in shapes:
        w = torch.empty(n, k, device="meta")
        gpu = dict(dot_from=dot_from_for(w), by_shape=True, interpreted=False)
        for slots in range(1, 65):
            bucket = triton.next_power_of_2(slots)
            for rows, padded in ((slots, bucket), (2 * slots, 2 * bucket)):
                assert launch_for(w, rows, **gpu) == launch_for(w, padded, **gpu), (n, k, rows, padded)


def test_the_dot_kernel_up_to_32_rows_by_weight():
    """dot_rows_for: 32 rows at N <= 2048 or K <= 1024 (run 162: the dot kernel faster than cuBLAS there at 32 rows),
    else MAX_ROWS; use_skinny_linear(dot_32=True) sets it, and the dot kernel at 32 rows gives the exact sums."""
    assert [dot_rows_for(torch.empty(n, k)) for n, k in ((2048, 6144), (1024, 2048), (6144, 1024), (4096, 1024),
                                                         (4096, 2048), (3072, 2048), (12288, 2048))] == [
        32, 32, 32, 32, MAX_ROWS, MAX_ROWS, MAX_ROWS]  # fmt: skip
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    gemms = skinny_gemms(talker).values()
    use_skinny_linear(talker, dot=True, dot_32=True, by_shape=True)
    assert all(m.skinny_rows == dot_rows_for(w) and m.skinny_by_shape for m, w, _ in gemms)
    assert talker.codec_head.skinny_rows == 32  # [3072, 64]: K <= 1024
    use_skinny_linear(talker, dot=True)
    assert all(m.skinny_rows == MAX_ROWS and "skinny_by_shape" not in m.__dict__ for m, _, _ in gemms)
    x = torch.randn(32, 64)
    head = talker.codec_head
    use_skinny_linear(talker, dot=True, dot_32=True)
    assert torch.equal(head(x), skinny_linear(x, head.weight, max_rows=32, launch=LAUNCH_DOT_INTERPRETED))
    use_skinny_linear(talker, dot=True)
    assert torch.equal(head(x), F.linear(x, head.weight))  # 32 rows > 16: cuBLAS's (here the CPU's) F.linear
    x, w, b = operands(32, 2048, 70, torch.bfloat16, seed=32)
    for launch in (dot_launch_for(w), dot_launch_for(torch.empty(1024, 2048), split=True)):
        got, want = skinny_linear(x, w, b, max_rows=32, launch=launch), reference(x, w, b)
        assert ((got.float() - want.float()).abs() <= (want.float().abs() * 2**-7).clamp_min(2**-126)).all()


def test_the_talker_service_sets_the_launches_by_shape_and_the_32_rows():
    """services/talker's apply_kernels (as on a GPU): its defaults give every GEMM launches by shape and dot_rows_for
    its weight; skinny_linear_by_shape and skinny_linear_dot_32 off, neither."""
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import apply_kernels

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    apply_kernels(talker, TalkerConfig(), on_cuda=True)
    gemms = skinny_gemms(talker).values()
    assert all(m.skinny_by_shape and m.skinny_rows == dot_rows_for(w) for m, w, _ in gemms)
    apply_kernels(talker, TalkerConfig(skinny_linear_by_shape=False, skinny_linear_dot_32=False), on_cuda=True)
    assert all("skinny_by_shape" not in m.__dict__ and m.skinny_rows == MAX_ROWS for m, _, _ in gemms)


def test_module_launch_is_what_module_linear_runs():
    """talker_fused.module_launch (the launch the bench times as the talker's): None without the switch and past a
    module's skinny_rows; otherwise launch_for by the module's settings, interpreted or as on a GPU; and
    module_linear's result equals skinny_linear at that launch (F.linear where it is None)."""
    from omni.models.qwen3_tts.talker_fused import module_launch, module_linear

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    down = talker.model.layers[0].mlp.down_proj
    assert module_launch(down, down.weight, 1) is None  # no switch: F.linear
    use_skinny_linear(talker, dot=True, by_shape=True, dot_32=True)
    w = down.weight
    for rows in (0, 1, 2, down.skinny_dot_from, 32, 33):
        want = None if not 0 < rows <= 32 else launch_for(w, rows, down.skinny_dot_from, True, interpreted=False)
        assert module_launch(down, w, rows, interpreted=False) == want, rows
    assert module_launch(down, w, 1, interpreted=False) == row_launch_for(w)
    assert module_launch(down, w, 1) == LAUNCH_INTERPRETED and module_launch(down, w, 33) is None
    for rows in (1, down.skinny_dot_from, 33):
        x = torch.randn(rows, w.shape[1])
        launch = module_launch(down, w, rows)
        want = F.linear(x, w) if launch is None else skinny_linear(x, w, max_rows=rows, launch=launch)
        assert torch.equal(module_linear(down, x, w), want), rows


def test_a_launch_pinned_on_a_module_is_what_it_runs_within_its_rows():
    """`skinny_launch` (tools/sweep_gemm_launch.py's candidates, bench_talker_step's +pin-...): module_launch gives
    it wherever the module's own launch is the dot kernel's, its own row-kernel launch below dot_from rows, None past
    skinny_rows; module_linear runs it (split-K here, which the module's own launch at these rows is not);
    use_skinny_linear unpins it."""
    from omni.models.qwen3_tts.talker_fused import module_launch, module_linear

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    use_skinny_linear(talker, dot=True, by_shape=True, dot_32=True)
    down = talker.model.layers[0].mlp.down_proj
    w = down.weight
    pinned = {"dot": True, "block_n": 16, "block_k": 16, "num_warps": 4, "num_stages": 2, "split_k": 2}
    assert launch_for(w, 8, down.skinny_dot_from, True) != pinned
    down.skinny_launch = pinned
    assert [module_launch(down, w, rows) for rows in (down.skinny_dot_from, 8, 32)] == [pinned] * 3
    below = down.skinny_dot_from - 1
    assert module_launch(down, w, below, interpreted=False) == launch_for(w, below, down.skinny_dot_from, True, False)
    assert module_launch(down, w, 33) is None
    x = torch.randn(8, w.shape[1])
    assert torch.equal(module_linear(down, x, w), skinny_linear(x, w, max_rows=8, launch=pinned))
    torch.testing.assert_close(module_linear(down, x, w), F.linear(x, w), rtol=1e-4, atol=1e-5)
    use_skinny_linear(talker, dot=True)
    assert "skinny_launch" not in down.__dict__


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("launch", [None, LAUNCH, DOT, SPLIT], ids=["interpreted", "gpu_launch", "dot", "split_k"])
def test_a_gated_input_has_the_bits_of_silu_mul_then_the_kernel(dtype, launch):
    """silu_gate: x = [gate | up] (here a row-strided view of a wider buffer, K not a multiple of the block) gives
    the bits of transformer_fused.silu_mul then skinny_linear at the same launch, from 1 to 32 rows."""
    gen = torch.Generator().manual_seed(7)
    w = (torch.randn(70, 300, generator=gen) / 300**0.5).to(dtype)
    b = torch.randn(70, generator=gen).to(dtype)
    for rows in (1, 3, 16, 32):
        gate_up = (torch.randn(rows, 608, generator=gen) * 3).to(dtype)[:, :600]
        gated = silu_mul(gate_up[:, :300], gate_up[:, 300:])
        want = skinny_linear(gated, w, b, max_rows=32, launch=launch)
        got = skinny_linear(gate_up.reshape(1, rows, 600), w, b, max_rows=32, launch=launch, silu_gate=True)
        assert got.shape == (1, rows, 70) and torch.equal(got[0], want), rows
        assert not torch.equal(skinny_linear(gate_up[:, 300:], w, b, max_rows=32, launch=launch), want)  # it gates


def test_a_gated_input_past_max_rows_is_f_linear_of_the_eager_product_and_bad_widths_are_refused():
    x = torch.randn(3, 600)
    w = torch.randn(70, 300) / 300**0.5
    want = F.linear(F.silu(x[:, :300]) * x[:, 300:], w)
    assert torch.equal(skinny_linear(x, w, max_rows=2, silu_gate=True), want)
    for width in (300, 599):
        with pytest.raises(ValueError, match="silu_gate"):
            skinny_linear(x[:, :width], w, silu_gate=True)


def test_silu_down_takes_the_silu_kernel_out_of_each_mlp_with_the_same_bits(tiny_model_dir, monkeypatch):
    """use_silu_down: every fused MLP (talker and code predictor) forms SiLU(gate) * up in its down projection's
    kernel where that projection runs one: decode steps of 2 and 1 rows (the row and the dot kernels at the
    interpreter's launches) call no silu_mul and give the codes, hidden state and caches of the silu_mul path, bit
    for bit; off again, silu_mul runs and no attribute is left."""
    from omni.models.qwen3_tts import talker_fused
    from omni.talker.generate import Synthesizer
    from omni.talker.model_runner import TalkerRunner
    from tests.kernel_runners import PREFILLED_SLOTS, prefill_two_requests

    synth = Synthesizer(tiny_model_dir("custom_voice"))
    plain = synth.model.talker
    fuse_talker_kernels(plain, add_norm=True)
    use_skinny_linear(plain, dot=True, by_shape=True, dot_32=True)
    gated = copy.deepcopy(plain)
    mlps = [m for m in gated.modules() if isinstance(m, type(gated.model.layers[0].mlp))]
    layers = len(gated.model.layers) + len(gated.code_predictor.model.layers)
    assert use_silu_down(gated) == len(mlps) == layers and all(m.silu_down for m in mlps)
    calls = []
    real_silu_mul = talker_fused.silu_mul
    monkeypatch.setattr(talker_fused, "silu_mul", lambda g, u: calls.append(g.shape) or real_silu_mul(g, u))
    runners = [TalkerRunner(t, synth.model.config, 3, 64) for t in (plain, gated)]
    for runner in runners:
        prefill_two_requests(runner, synth)
    for slots in (PREFILLED_SLOTS, PREFILLED_SLOTS, PREFILLED_SLOTS[:1]):
        calls.clear()
        want = runners[0].decode_step(torch.tensor(slots))[0]
        assert len(calls) == len(plain.model.layers) + 15 * len(plain.code_predictor.model.layers)  # 15 passes
        calls.clear()
        assert torch.equal(runners[1].decode_step(torch.tensor(slots))[0], want) and not calls
    assert torch.equal(runners[1].last_hidden, runners[0].last_hidden)
    for cache in ("cache", "predictor_cache"):
        for kv in ("k", "v"):
            assert torch.equal(getattr(getattr(runners[1], cache), kv), getattr(getattr(runners[0], cache), kv))
    calls.clear()
    x = torch.randn(1, 33, gated.cfg.hidden_size)  # past the down projection's 32 rows: silu_mul, then F.linear
    with torch.no_grad():
        assert torch.equal(gated.model.layers[0].mlp(x), plain.model.layers[0].mlp(x)) and len(calls) == 2
        assert use_silu_down(gated, on=False) == layers and not any("silu_down" in m.__dict__ for m in mlps)
        gated.model.layers[0].mlp(x[:, :1])
    assert len(calls) == 3


def test_silu_down_with_max_rows_gates_only_the_forwards_of_that_many_rows(monkeypatch):
    """use_silu_down(max_rows=1): a 1-row forward of a fused MLP forms SiLU(gate) * up in the down projection's
    kernel, a 2-row one (which the kernels also take) runs silu_mul first; the same bits as the plain MLP both ways."""
    from omni.models.qwen3_tts import talker_fused

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    plain = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(plain, add_norm=True)
    use_skinny_linear(plain, dot=True, by_shape=True, dot_32=True)
    gated = copy.deepcopy(plain)
    use_silu_down(gated, max_rows=1)
    mlps = [layer.mlp for layer in gated.model.layers]
    assert all(m.silu_down == 1 for m in mlps)
    calls = []
    real_silu_mul = talker_fused.silu_mul
    monkeypatch.setattr(talker_fused, "silu_mul", lambda g, u: calls.append(g.shape[:-1]) or real_silu_mul(g, u))
    x = torch.randn(1, 2, gated.cfg.hidden_size)
    with torch.no_grad():
        for rows, silu_muls in ((1, 0), (2, 1)):
            calls.clear()
            got = gated.model.layers[0].mlp(x[:, :rows])
            assert len(calls) == silu_muls, (rows, calls)
            calls.clear()
            assert torch.equal(got, plain.model.layers[0].mlp(x[:, :rows])) and len(calls) == 1
    use_silu_down(gated)
    assert all(m.silu_down == KERNEL_MAX_ROWS for m in mlps)  # 0: every forward the kernels take
    calls.clear()
    with torch.no_grad():
        assert torch.equal(gated.model.layers[0].mlp(x), plain.model.layers[0].mlp(x)) and len(calls) == 1  # plain's


def test_the_talker_service_gates_the_down_projections_only_when_asked():
    """skinny_linear_silu_down (off by default: not yet timed on a GPU) sets every fused MLP, and only with
    skinny_linear on."""
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import apply_kernels

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    mlps = [layer.mlp for layer in [*talker.model.layers, *talker.code_predictor.model.layers]]
    assert not TalkerConfig().skinny_linear_silu_down
    apply_kernels(talker, TalkerConfig(), on_cuda=True)
    assert not any("silu_down" in m.__dict__ for m in mlps)
    apply_kernels(talker, TalkerConfig(skinny_linear_silu_down=True), on_cuda=True)
    assert all(m.silu_down for m in mlps)
    apply_kernels(talker, TalkerConfig(skinny_linear_silu_down=True, skinny_linear=False), on_cuda=True)
    assert not any("silu_down" in m.__dict__ for m in mlps)
    apply_kernels(talker, TalkerConfig(skinny_linear_silu_down=True, skinny_linear_silu_down_max_rows=1), on_cuda=True)
    assert all(m.silu_down == 1 for m in mlps)
    with pytest.raises(ValueError, match="skinny_linear_silu_down_max_rows"):
        TalkerConfig(skinny_linear_silu_down_max_rows=-1).validate()


@pytest.mark.parametrize("launch", [None, LAUNCH, DOT, SPLIT], ids=["interpreted", "gpu_launch", "dot", "split_k"])
def test_the_first_weights_loaded_before_the_wait_give_the_same_bits(launch):
    """programmatic_launch's early_weights: each program loads its first weight chunk before waiting for the kernels
    ahead; the same sums in the same order, so the same bits as without, gated input or not, 1 to 32 rows (the
    interpreter runs it with the wait off)."""
    from omni.kernels.programmatic_launch import set_programmatic_launch

    gen = torch.Generator().manual_seed(11)
    w = (torch.randn(70, 2048, generator=gen) / 2048**0.5).to(torch.bfloat16)
    b = torch.randn(70, generator=gen).to(torch.bfloat16)
    for rows in (1, 3, 32):
        x = torch.randn(rows, 4096, generator=gen).to(torch.bfloat16)
        for gate in (False, True):
            operand = x if gate else x[:, :2048]
            want = skinny_linear(operand, w, b, max_rows=32, launch=launch, silu_gate=gate)
            try:
                set_programmatic_launch(False, early_weights=True)
                got = skinny_linear(operand, w, b, max_rows=32, launch=launch, silu_gate=gate)
            finally:
                set_programmatic_launch(False)
            assert torch.equal(got, want), (rows, gate)


def test_max_rows_is_checked():
    x, w, _ = operands(2, 64, 16, torch.float32)
    assert torch.equal(skinny_linear(x, w, max_rows=1), F.linear(x, w))  # 2 rows > 1: F.linear itself
    with pytest.raises(ValueError, match="max_rows"):
        skinny_linear(x, w, max_rows=KERNEL_MAX_ROWS + 1)


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.skinny_linear import LAUNCH, MAX_ROWS, _skinny_linear_dot_kernel, _skinny_linear_kernel

signature = {"x_ptr": "*bf16", "w_ptr": "*bf16", "b_ptr": "*bf16", "y_ptr": "*bf16", "K": "i32", "N": "i32",
             "x_stride": "i32", "y_stride": "i32", "up_offset": "i32", "HAS_BIAS": "constexpr",
             "SILU_GATE": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "PDL": "constexpr",
             "EARLY_WEIGHTS": "constexpr"}
for has_bias, gate, block_n, block_k, warps in ((False, False, LAUNCH["block_n"], LAUNCH["block_k"],
                                                 LAUNCH["num_warps"]), (True, False, 8, 512, 4),
                                                (False, False, 16, 256, 4), (False, True, 4, 2048, 4),
                                                (True, True, 2, 1024, 1), (False, True, *LAUNCH.values())):
    for early in (False, True) if gate else (False,):
        constexprs = {"HAS_BIAS": has_bias, "SILU_GATE": gate, "BLOCK_N": block_n, "BLOCK_K": block_k, "PDL": gate,
                      "EARLY_WEIGHTS": early}
        ptx = compile(ASTSource(_skinny_linear_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                      options={"num_warps": warps, "launch_pdl": gate}).asm["ptx"]
        assert ("griddepcontrol.wait" in ptx) == gate
        if gate:  # with early weights a load (the first weight chunk's) before the wait; without, none
            assert (ptx.index("ld.global") < ptx.index("griddepcontrol.wait")) == early
dot_signature = {**signature, "M": "i32", "part_ptr": "*fp32", "ticket_ptr": "*i32", "ROWS_PAD": "constexpr",
                 "SPLIT_K": "constexpr", "DOT_FP32": "constexpr"}
for block_n, block_k, stages, split_k, rows_pad, gate in ((16, 512, 3, 1, 16, False), (32, 256, 4, 1, 16, False),
                                                         (64, 128, 4, 1, 16, False), (16, 256, 3, 4, 16, False),
                                                         (32, 128, 4, 4, 16, True), (16, 512, 3, 1, 32, True),
                                                         (32, 128, 4, 4, 32, True)):
    constexprs = {"HAS_BIAS": not gate, "SILU_GATE": gate, "ROWS_PAD": rows_pad, "BLOCK_N": block_n,
                  "BLOCK_K": block_k, "SPLIT_K": split_k, "DOT_FP32": False, "PDL": split_k > 1,
                  "EARLY_WEIGHTS": gate}
    options = {"num_warps": 4, "num_stages": stages, "launch_pdl": split_k > 1}
    ptx = compile(ASTSource(_skinny_linear_dot_kernel, dot_signature, constexprs), target=GPUTarget("cuda", 90, 32),
                  options=options).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == (split_k > 1)
    if split_k > 1:
        assert (ptx.index("ld.global") < ptx.index("griddepcontrol.wait")) == gate
print("compiled")
"""


def test_the_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


SHARED = """
import sys

from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.skinny_linear import _skinny_linear_dot_kernel, dot_launch

H100 = 232_448  # the shared memory a program may have on an H100 or H200, in bytes
signature = {"x_ptr": "*bf16", "w_ptr": "*bf16", "b_ptr": "*bf16", "y_ptr": "*bf16", "M": "i32", "K": "i32",
             "N": "i32", "x_stride": "i32", "y_stride": "i32", "part_ptr": "*fp32", "ticket_ptr": "*i32",
             "up_offset": "i32"}
signature |= {k: "constexpr" for k in ("HAS_BIAS", "SILU_GATE", "ROWS_PAD", "BLOCK_N", "BLOCK_K", "SPLIT_K",
                                       "DOT_FP32", "PDL", "EARLY_WEIGHTS")}


def shared(launch, dtype, stages, gate=False):
    types = {k: dtype if v == "*bf16" else v for k, v in signature.items()}
    constexprs = {"HAS_BIAS": False, "SILU_GATE": gate, "ROWS_PAD": 32, "BLOCK_N": launch["block_n"],
                  "BLOCK_K": launch["block_k"], "SPLIT_K": launch.get("split_k", 1), "DOT_FP32": False, "PDL": False,
                  "EARLY_WEIGHTS": False}
    done = compile(ASTSource(_skinny_linear_dot_kernel, types, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 4, "num_stages": stages})
    return done.metadata.shared


# Every dot launch dot_launch_for gives, at 32 padded rows: in bf16 each fits at its stages (no call is refitted).
for launch, gate in ((dot_launch(16, 512, num_stages=3), False), (dot_launch(32, 256, num_stages=4), False),
                     (dot_launch(64, 256, num_stages=4), False), (dot_launch(64, 128, num_stages=4), False),
                     (dot_launch(32, 128, num_stages=4, split_k=4), True)):
    assert shared(launch, "*bf16", launch["num_stages"], gate) <= H100, launch
wide = dot_launch(64, 256, num_stages=4)  # the predictor's [6144, 1024] gate_up, in fp32: run 206's failure
print(shared(wide, "*fp32", 4), shared(wide, "*fp32", 3))
"""


def test_in_bf16_every_dot_launch_fits_and_in_fp32_one_needs_fewer_stages(tmp_path):
    """Compiled for sm_90 (no GPU needed): the shared memory the dot kernel asks at 32 padded rows. The tuned launches
    fit the H100's in bf16, so `launch_fitting` never changes their stages; in fp32 the 64 x 256 launch at 4 stages
    asks more than the H100 has (run 206) and at 3 fits, which is where launch_fitting lands."""
    done = compile_for_sm90(SHARED, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    at_4, at_3 = map(int, done.stdout.split())
    assert at_4 > 232_448 >= at_3


def test_launch_fitting_takes_a_stage_off_until_it_fits_and_remembers():
    """The retry on Triton's OutOfResources, with a stand-in for a device whose shared memory holds 3 stages (the
    limit a GPU gives; the sm_90 compile above shows where one is met)."""
    tried = []

    class Kernel:  # kernel[grid](*args, num_stages=..., **options), as a Triton JIT function is called
        def __getitem__(self, grid):
            def launch(*args, num_stages, **options):
                tried.append(num_stages)
                if num_stages > options["fits"]:
                    raise triton.runtime.errors.OutOfResources(num_stages * 98_304, 232_448, "shared memory")

            return launch

    launch_fitting(Kernel(), (1,), (), ("a",), {"num_stages": 4, "fits": 3})
    launch_fitting(Kernel(), (1,), (), ("a",), {"num_stages": 4, "fits": 3})
    launch_fitting(Kernel(), (1,), (), ("b",), {"num_stages": 4, "fits": 4})
    assert tried == [4, 3, 3, 4]  # the second call starts at the stages that fit; another key at its own
    with pytest.raises(triton.runtime.errors.OutOfResources):
        launch_fitting(Kernel(), (1,), (), ("c",), {"num_stages": 2, "fits": 0})
    assert tried[-2:] == [2, 1]


def test_decode_steps_with_the_switch_give_the_same_codes(tiny_model_dir):
    """A tiny talker's decode steps (fp32; a greedy and a sampling request) with the predictor's projections through
    the kernel: the same codes as through F.linear, the hidden state within rounding."""
    from omni.talker.generate import Synthesizer
    from omni.talker.model_runner import TalkerRunner
    from tests.kernel_runners import PREFILLED_SLOTS, prefill_two_requests

    synth = Synthesizer(tiny_model_dir("custom_voice"))
    rewired = copy.deepcopy(synth.model.talker)
    assert use_skinny_linear(rewired) > 0
    runners = [TalkerRunner(t, synth.model.config, 3, 64) for t in (synth.model.talker, rewired)]
    for runner in runners:
        prefill_two_requests(runner, synth)
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(3):
        assert torch.equal(runners[1].decode_step(slots)[0], runners[0].decode_step(slots)[0]), f"step {step}"
    torch.testing.assert_close(runners[1].last_hidden, runners[0].last_hidden, rtol=1e-4, atol=1e-5)


def test_the_bench_times_every_kind_of_gemm_of_the_fused_talker():
    """tools/bench_skinny_linear.py's weights: one per kind of GEMM in a fused talker's step (the first layer's), each
    the tensor the step multiplies by, with its bias."""
    from tests.tool_modules import load_tool

    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    talker = Qwen3TTSTalker(config.talker).eval()
    fuse_talker_kernels(talker)
    weights = load_tool("bench_skinny_linear").gemm_weights(talker)
    predictor = talker.code_predictor
    for prefix, root in (("", talker.model), ("code_predictor.", predictor.model)):
        attention, mlp = root.layers[0].self_attn, root.layers[0].mlp
        assert weights[f"{prefix}model.layers.self_attn.qkv_weight"][:2] == (attention, attention.qkv_weight)
        o_proj = attention.o_proj
        assert weights[f"{prefix}model.layers.self_attn.o_proj.weight"][:2] == (o_proj, o_proj.weight)
        assert weights[f"{prefix}model.layers.mlp.gate_up_weight"][:2] == (mlp, mlp.gate_up_weight)
        assert weights[f"{prefix}model.layers.mlp.down_proj.weight"][:2] == (mlp.down_proj, mlp.down_proj.weight)
    projection = predictor.small_to_mtp_projection
    assert weights["code_predictor.small_to_mtp_projection.weight"] == (projection, projection.weight, projection.bias)
    assert weights["codec_head.weight"][1] is talker.codec_head.weight
    assert weights["code_predictor.lm_head.weight"][1] is predictor.lm_head[0].weight
    assert weights["text_projection.linear_fc2.weight"][1] is talker.text_projection.linear_fc2.weight
    assert len(weights) == 13  # the 12 above and text_projection.linear_fc1


def test_the_bench_takes_copies_of_a_weight_in_turn():
    """tools/bench_skinny_linear.py's cold timing: copies of the weight holding at least the asked bytes, equal to
    it, not sharing its memory, and each call the next of them."""
    from tests.tool_modules import load_tool

    bench = load_tool("bench_skinny_linear")
    x, w, b = operands(2, 64, 16, torch.float32)  # a 4 KB weight
    copies = bench.weight_copies(w, 10_000)
    assert len(copies) == 3 and copies[0] is w
    assert all(torch.equal(c, w) and c.data_ptr() != w.data_ptr() for c in copies[1:])
    assert bench.weight_copies(w, 0) == [w]
    seen = []
    call = bench.in_turn(lambda x, weight, bias: seen.append(weight) or F.linear(x, weight, bias), x, copies, b)
    for _ in range(4):
        torch.testing.assert_close(call(), F.linear(x, w, b))
    assert [id(t) for t in seen] == [id(copies[i % 3]) for i in range(4)]
