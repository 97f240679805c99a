"""Fused decoder-layer kernels against their PyTorch definitions, and the fused talker against the eager one.

On CPU through the Triton interpreter; tools/bench_talker_step.py checks the fused step on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omni.kernels.transformer_fused import (
    add_rms_norm,
    add_rms_norm_reference,
    rms_norm,
    rms_norm_reference,
    rms_norm_rope,
    rms_norm_rope_reference,
    silu,
    silu_mul,
    silu_mul_reference,
)

from omni.models.qwen3_tts.talker import rope_cos_sin, rope_frequencies
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels
from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

# bf16 tolerance: the interpreter truncates where the GPU rounds to nearest, at each of the (up to three) roundings
# the eager ops make, so outputs may differ by two bf16 ulps (2^-6 relative) from the eager ops; on the GPU they
# round alike. fp32 differs only by the order of the sums.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=2**-6, atol=2**-6)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1, 16), (3, 5, 24), (2, 3, 1024), (1, 2, 1000)])
def test_rms_norm(dtype, shape):
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    w = (1 + torch.randn(shape[-1], generator=gen) * 0.1).to(dtype)
    torch.testing.assert_close(rms_norm(x, w, 1e-6), rms_norm_reference(x, w, 1e-6), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("heads,kv_heads,dim,tokens", [(4, 2, 16, 3), (16, 8, 128, 1), (3, 1, 12, 2)])
def test_rms_norm_rope_on_slices_of_a_fused_projection(dtype, heads, kv_heads, dim, tokens):
    gen = torch.Generator().manual_seed(1)
    b = 2
    qkv = torch.randn(b, tokens, (heads + 2 * kv_heads) * dim, generator=gen).to(dtype)  # q | k | v columns
    w = (1 + torch.randn(dim, generator=gen) * 0.1).to(dtype)
    positions = torch.randint(0, 500, (b, tokens), generator=gen)
    cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, "cpu"), dtype)
    q, k = qkv[..., : heads * dim], qkv[..., heads * dim : (heads + kv_heads) * dim]
    for part, n in ((q, heads), (k, kv_heads)):
        want = rms_norm_rope_reference(part.reshape(b, tokens, n, dim), w, 1e-6, cos, sin)
        tol = TOL[dtype]
        if dtype == torch.bfloat16:
            # Four roundings in a row (normalise, scale, each product, the sum), truncated by the interpreter, and
            # the sum may cancel: bound the error by four ulps of the largest value rather than relatively.
            tol = dict(rtol=0, atol=float(want.abs().max()) * 2**-5)
        torch.testing.assert_close(rms_norm_rope(part, w, 1e-6, cos, sin), want, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_mul_on_column_slices(dtype):
    gen = torch.Generator().manual_seed(2)
    gate_up = (torch.randn(3, 2, 2 * 1500, generator=gen) * 2).to(dtype)
    gate, up = gate_up[..., :1500], gate_up[..., 1500:]
    torch.testing.assert_close(silu_mul(gate, up), silu_mul_reference(gate, up), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_is_f_silu(dtype):
    """The text projection's SiLU: F.silu's values (bf16: within the interpreter's truncation), rows of any count
    and a width past one block, from a row-strided view."""
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(3, 2, 2500, generator=gen) * 4).to(dtype)[..., 100:2300]
    got = silu(x)
    assert got.shape == x.shape and got.is_contiguous()
    torch.testing.assert_close(got, torch.nn.functional.silu(x), **TOL[dtype])
    assert not torch.allclose(got.float(), x.float(), **TOL[dtype])  # not the input back


def _runners_with_one_request(synth: Synthesizer, talkers) -> list[TalkerRunner]:
    """A runner per talker, each with the same seeded request prefilled in slot 1."""
    request = SpeechRequest(text="A sentence for the fused talker.", speaker="Ryan", language="English")
    runners = [TalkerRunner(t, synth.model.config, 2, 48) for t in talkers]
    for r in runners:
        r.prefill(1, synth.builder.build(request), synth.sampling_params(SynthesisOptions(seed=3, max_new_tokens=12)))
    return runners


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1, 16), (3, 5, 24), (2, 1, 1000)])
def test_add_rms_norm(dtype, shape):
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    wide = (torch.randn(*shape[:-1], 2 * shape[-1], generator=gen)).to(dtype)
    delta = wide[..., : shape[-1]]  # a column slice, as a fused projection's output can be
    w = (1 + torch.randn(shape[-1], generator=gen) * 0.1).to(dtype)
    total, normed = add_rms_norm(x, delta, w, 1e-6)
    want_total, want_normed = add_rms_norm_reference(x, delta, w, 1e-6)
    torch.testing.assert_close(total, want_total, **TOL[dtype])
    torch.testing.assert_close(normed, want_normed, **TOL[dtype])
    if dtype == torch.float32:  # the norm is rms_norm's arithmetic on the sum, to the bit
        assert torch.equal(total, x + delta) and torch.equal(normed, rms_norm(total, w, 1e-6))
    with pytest.raises(ValueError, match="delta"):
        add_rms_norm(x, delta.double(), w, 1e-6)


def test_fused_add_norm_forward_equals_the_layer_by_layer_one(tiny_model_dir):
    # fp32: the same sums and the same norm arithmetic, so the same bits; toggled back off, the class forward again.
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    layered = copy.deepcopy(synth.model.talker)
    fuse_talker_kernels(layered)
    added = copy.deepcopy(layered)
    fuse_talker_kernels(added, add_norm=True)
    assert "forward" in added.model.__dict__ and "forward" in added.code_predictor.model.__dict__
    runners = _runners_with_one_request(synth, (layered, added))
    slots = torch.tensor([1])
    for step in range(2):
        assert torch.equal(runners[1].decode_step(slots)[0], runners[0].decode_step(slots)[0]), f"step {step}"
    assert torch.equal(runners[1].last_hidden, runners[0].last_hidden)
    fuse_talker_kernels(added, add_norm=False)
    assert "forward" not in added.model.__dict__


def test_fused_talker_equals_eager_talker(tiny_model_dir):
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    eager = synth.model.talker
    fused = copy.deepcopy(eager)
    keys = {k: v.clone() for k, v in fused.state_dict().items()}
    assert fuse_talker_kernels(fused) > 0 and fuse_talker_kernels(fused) == 0  # idempotent
    after = fused.state_dict()
    assert keys.keys() == after.keys() and all(torch.equal(keys[k], after[k]) for k in keys)  # same checkpoint view

    runners = _runners_with_one_request(synth, (eager, fused))
    slots = torch.tensor([1])
    for step in range(3):  # each step is ~1,000 interpreted kernel calls: keep it short
        want, _ = runners[0].decode_step(slots)
        got, _ = runners[1].decode_step(slots)
        assert torch.equal(got, want), f"step {step}"
    torch.testing.assert_close(runners[1].last_hidden, runners[0].last_hidden, rtol=1e-4, atol=1e-4)


def test_check_fused_kernels_tool_reports_each_kernel_against_its_eager_definition(tmp_path):
    """tools/check_fused_kernels.py (run on the GPU, where the compiler could contract a product into an FMA) on
    this CPU: every kernel in both dtypes at both shapes, with RoPE alone and the fp32 residual sums bit for bit."""
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "fused.json"
    cmd = [sys.executable, str(root / "tools/check_fused_kernels.py"), "--device", "cpu", "--rows", "3", "--out", out]
    run = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, cwd=root, env=os.environ | {"TRITON_INTERPRET": "1"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert {(r["shape"], r["dtype"]) for r in rows} == {
        (s, d) for s in ("talker", "codec") for d in ("float32", "bfloat16")
    }
    assert len(rows) == 4 * 8 and all(r["elements"] > 0 for r in rows)
    exact = [r for r in rows if r["dtype"] == "float32" and r["kernel"] in ("rope", "add_sum", "scaled_add_sum")]
    assert len(exact) == 6 and all(r["equal"] and r["differing"] == 0 for r in exact), exact
    assert run.stdout.count("\n| talker |") + run.stdout.count("\n| codec |") == 32
