"""The residual add in the epilogue of the GEMM before it and the RMSNorm in the prologue of the GEMM after it
(kernels/skinny_linear.py `residual`, `norm`; talker_fused's `gemm_add_norm`, bench_talker_step's +gemm-add-norm).

On CPU through the Triton interpreter."""

import copy
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU tensors

import pytest
import torch
from omni.kernels.skinny_linear import fallback_linear, skinny_linear
from omni.kernels.transformer_fused import add_rms_norm, rms_norm, rms_norm_reference

from omni.models.qwen3_tts import talker_fused
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels, use_skinny_linear

ROW = {"block_n": 16, "block_k": 256, "num_warps": 4}  # the row kernel; K of 600 spans 3 chunks, the last part-masked
DOT = {"dot": True, "block_n": 32, "block_k": 128, "num_warps": 4}
SPLIT = {**DOT, "split_k": 3}
LAUNCHES = pytest.mark.parametrize("launch", [ROW, DOT, SPLIT], ids=["row", "dot", "split_k"])


def operands(rows: int, seed: int = 0, k: int = 600, n: int = 70):
    gen = torch.Generator().manual_seed(seed)
    x = (3 * torch.randn(rows, k, generator=gen) + 1).to(torch.bfloat16)  # an RMS far from 1: the norm shows
    w = (torch.randn(n, k, generator=gen) / k**0.5).to(torch.bfloat16)
    norm_w = (1 + torch.rand(k, generator=gen)).to(torch.bfloat16)
    residual = torch.randn(rows, n, generator=gen).to(torch.bfloat16)
    return x, w, norm_w, residual


@LAUNCHES
@pytest.mark.parametrize("rows", [1, 3, 17])
def test_a_norm_in_the_prologue_is_the_norm_kernel_then_the_product(launch, rows):
    """Each row normalized as rms_norm normalizes it (its squares summed in another order, so within a bf16 step of
    each normalized input), then multiplied: within a step or two of skinny_linear of the norm kernel's output, and
    far from the product of x not normalized."""
    x, w, norm_w, _ = operands(rows)
    got = skinny_linear(x, w, max_rows=32, launch=launch, norm=(norm_w, 1e-6))
    want = skinny_linear(rms_norm(x, norm_w, 1e-6), w, max_rows=32, launch=launch)
    assert got.shape == (rows, 70) and got.dtype == torch.bfloat16
    scale = want.float().abs().max()
    assert (got.float() - want.float()).abs().max() <= 2**-6 * scale
    exact = torch.nn.functional.linear(rms_norm_reference(x.double(), norm_w.double(), 1e-6), w.double())
    assert (got.double() - exact).abs().max() <= 2**-5 * scale
    plain = skinny_linear(x, w, max_rows=32, launch=launch)
    assert (plain.float() - want.float()).abs().max() > 0.5 * scale  # not normalized: far off


@LAUNCHES
@pytest.mark.parametrize("rows", [1, 5])
def test_a_residual_in_the_epilogue_is_added_to_the_rounded_product(launch, rows):
    """residual + the product rounded to bf16, summed in fp32 and rounded: the bits of the GEMM then the sum
    add_rms_norm stores (a kernel too: the interpreter rounds to bf16 by truncating, as it does here), with a norm in
    front or not, and with a gated input; within a bf16 step of PyTorch's add (which rounds to nearest)."""
    x, w, norm_w, residual = operands(rows, seed=1)
    ones = torch.ones(70, dtype=torch.bfloat16)
    gated = x.repeat(1, 2)
    for norm, gate in ((None, False), ((norm_w, 1e-6), False), (None, True)):
        inputs = gated if gate else x
        product = skinny_linear(inputs, w, max_rows=32, launch=launch, silu_gate=gate, norm=norm)
        got = skinny_linear(inputs, w, max_rows=32, launch=launch, silu_gate=gate, norm=norm, residual=residual)
        assert torch.equal(got, add_rms_norm(residual, product, ones, 1e-6)[0])
        torch_sum = (residual + product).float()
        assert ((got.float() - torch_sum).abs() <= (torch_sum.abs() * 2**-7).clamp_min(2**-126)).all()
        assert not torch.equal(got, product)


def test_past_max_rows_the_fallback_runs_the_norm_kernel_the_product_and_the_add():
    x, w, norm_w, residual = operands(5, seed=2)
    norm = (norm_w, 1e-6)
    want = residual + torch.nn.functional.linear(rms_norm(x, *norm), w)
    assert torch.equal(skinny_linear(x, w, max_rows=4, norm=norm, residual=residual), want)
    assert torch.equal(fallback_linear(x, w, norm=norm, residual=residual), want)
    assert torch.equal(fallback_linear(x, w), torch.nn.functional.linear(x, w))


def test_bad_norms_and_residuals_are_refused():
    x, w, norm_w, residual = operands(3)
    with pytest.raises(ValueError, match="silu_gate and norm"):
        skinny_linear(x.repeat(1, 2), w, silu_gate=True, norm=(norm_w, 1e-6))
    with pytest.raises(ValueError, match="norm's weight"):
        skinny_linear(x, w, norm=(norm_w[:-1], 1e-6))
    with pytest.raises(ValueError, match="norm's weight"):
        skinny_linear(x, w, norm=(norm_w.float(), 1e-6))
    with pytest.raises(ValueError, match="residual must be"):
        skinny_linear(x, w, residual=residual[:, :-1])
    with pytest.raises(ValueError, match="residual must be"):
        skinny_linear(x, w, residual=residual.float())


def test_the_folded_decoder_steps_without_add_norm_kernels_and_keeps_the_codes(tiny_model_dir, monkeypatch):
    """fuse_talker_kernels(gemm_add_norm=True): decode steps whose GEMMs all run the kernels (2 and 1 rows, the dot
    and the row kernel at the interpreter's launches) call no add_rms_norm, one rms_norm per decoder forward (the
    final norm), and give the codes of the add + norm kernels; the hidden state within bf16 rounding. Past the
    GEMMs' rows (33), the add + norm forward."""
    from omni.talker.generate import Synthesizer
    from omni.talker.model_runner import TalkerRunner
    from tests.kernel_runners import PREFILLED_SLOTS, prefill_two_requests

    synth = Synthesizer(tiny_model_dir("custom_voice"))
    plain = synth.model.talker
    fuse_talker_kernels(plain, add_norm=True)
    use_skinny_linear(plain, dot=True, by_shape=True, dot_32=True)
    folded = copy.deepcopy(plain)
    fuse_talker_kernels(folded, add_norm=True, gemm_add_norm=True)
    calls = {"add_rms_norm": 0, "rms_norm": 0}
    for name in calls:
        monkeypatch.setattr(talker_fused, name, counted(getattr(talker_fused, name), name, calls))
    flags = dict(kv_write_kernel=True, norm_rope_write_kernel=True)
    runners = [TalkerRunner(t, synth.model.config, 3, 64, **flags) for t in (plain, folded)]
    for runner in runners:
        prefill_two_requests(runner, synth)
    for slots in (PREFILLED_SLOTS, PREFILLED_SLOTS, PREFILLED_SLOTS[:1]):
        want = runners[0].decode_step(torch.tensor(slots))[0]
        calls.update(add_rms_norm=0, rms_norm=0)
        assert torch.equal(runners[1].decode_step(torch.tensor(slots))[0], want)
        assert calls == {"add_rms_norm": 0, "rms_norm": 16}  # the backbone and the predictor's 15 passes
    a, b = runners[1].last_hidden.float(), runners[0].last_hidden.float()
    assert (a - b).abs().max() <= 2**-6 * b.abs().max()
    no_write = TalkerRunner(folded, synth.model.config, 3, 64, kv_write_kernel=True)  # K/V written apart
    for decoder, cache in ((folded.model, "cache"), (folded.code_predictor.model, "predictor_cache")):
        assert talker_fused._folds(decoder, 32, getattr(runners[1], cache))
        assert not talker_fused._folds(decoder, 33, getattr(runners[1], cache))  # past the GEMMs' 32 rows: F.linear
        assert not talker_fused._folds(decoder, 2, getattr(no_write, cache))


def counted(fn, name: str, calls: dict):
    """fn, counting its calls in calls[name]."""

    def call(*args):
        calls[name] += 1
        return fn(*args)

    return call
