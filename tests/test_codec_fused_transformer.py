"""The codec transformer with the talker's fused kernels (codec_graphs.fuse_transformer, the codec's
`transformer_kernels`) against the eager one, and the RoPE-only kernel against the eager RoPE. On CPU through the
Triton interpreter; tools/bench_codec.py --transformer-kernels checks it on the GPU, under graph replay too."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels import transformer_fused
from omni.kernels.transformer_fused import rms_norm_rope, rope_reference

from omni.models.qwen3_tts import talker_fused
from omni.models.qwen3_tts.codec_graphs import fuse_transformer, unfuse_transformer
from tests.codec_streams import CFG, PLAN, one_frame_steps, same_run, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90


def _cos_sin(b: int, t: int, dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """As the codec's WindowTransformer: [B, 1, T, D] from absolute positions, in the activations' dtype."""
    positions = torch.arange(t)[None, :] + torch.tensor([[0], [37]])[:b]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = positions[:, :, None].float() * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)[:, None]
    return emb.cos().to(dtype), emb.sin().to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_steps_rope_table_is_the_textbook_one_to_the_bit(dtype):
    """WindowTransformer's cos/sin (one product by the doubled frequencies, cos and sin stored in the activations'
    dtype by their own kernels: 3 ops fewer a step) equal concatenated angles, cos/sin in fp32, then a cast, bit for
    bit, at small and large absolute positions (planted: the angles cast to bf16 first, caught in bf16)."""
    model = tiny_codec_decoder(dtype)
    seen, real = [], model.pre_transformer.run_layers

    def run_layers(h, cos, sin, windows, attend):
        seen.append((cos, sin))
        return real(h, cos, sin, windows, attend)

    model.pre_transformer.run_layers = run_layers
    state = model.new_state(3)
    state.positions[1] = 100_003  # a stream ~2 hours in
    codes = torch.randint(0, 2048, (4, 16), generator=torch.Generator().manual_seed(3))
    model.decode_streams(state, [0, 1], [codes, codes[:3]])
    (cos, sin), dim = seen[0], CFG.head_dim
    positions = torch.tensor([[0], [100_003]]) + torch.arange(4)[None, :]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = positions[:, :, None].float() * inv_freq.to(dtype)  # a buffer: in the module's dtype, as the official's
    emb = torch.cat([freqs, freqs], dim=-1)[:, None]
    assert cos.dtype == sin.dtype == dtype and cos.shape == (2, 1, 4, dim)
    assert torch.equal(cos, emb.cos().to(dtype)) and torch.equal(sin, emb.sin().to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_alone_equals_the_eager_rope(dtype):
    b, t, heads, dim = 2, 3, 4, 16
    qkv = torch.randn(b, t, 3 * heads * dim, generator=torch.Generator().manual_seed(4)).to(dtype)
    x = qkv[..., heads * dim : 2 * heads * dim].view(b, t, heads, dim)  # a column slice, as the fused projection's
    cos, sin = _cos_sin(b, t, dim, dtype)
    want = rope_reference(x.transpose(1, 2), cos, sin)  # the codec's layout: [B, heads, T, D], cos [B, 1, T, D]
    got = rms_norm_rope(x, None, 0.0, cos.transpose(1, 2), sin.transpose(1, 2)).transpose(1, 2)
    if dtype == torch.float32:
        assert torch.equal(got, want)  # every rounding where the eager ops round
    else:  # the interpreter truncates its bf16 conversions: two roundings and a sum, bounded by an ulp of the max
        torch.testing.assert_close(got, want, rtol=0, atol=float(want.abs().max()) * 2**-7)
    with pytest.raises(ValueError, match="heads, D"):
        rms_norm_rope(qkv, None, 0.0, cos, sin)


def test_fusing_keeps_the_weights_and_is_idempotent():
    model = tiny_codec_decoder(torch.float32)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    layers = CFG.num_hidden_layers
    assert fuse_transformer(model) == layers * 4 + 1  # per layer 2 norms, attention, MLP; the final norm
    after = model.state_dict()
    assert after.keys() == before.keys() and all(torch.equal(after[k], v) for k, v in before.items())
    assert fuse_transformer(model) == 0


def test_unfusing_gives_back_the_eager_decoder_to_the_bit():
    plain = stream(tiny_codec_decoder(torch.float32))
    model = tiny_codec_decoder(torch.float32)
    fuse_transformer(model)
    assert unfuse_transformer(model) == CFG.num_hidden_layers * 4 + 1 and unfuse_transformer(model) == 0
    assert same_run(stream(model), plain)
    assert fuse_transformer(model) == CFG.num_hidden_layers * 4 + 1  # and it fuses again


def test_decoder_with_the_fused_transformer_equals_the_eager_one(monkeypatch):
    """fp32: the norms' sums in another order and one GEMM for three; everything else as eager."""
    eager = tiny_codec_decoder(torch.float32)
    fused = tiny_codec_decoder(torch.float32)
    fuse_transformer(fused)
    calls = {"rms_norm": 0, "silu_mul": 0, "rms_norm_rope": 0}

    def counted(module, name):
        real = getattr(module, name)

        def kernel(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, kernel)

    for module, name in ((talker_fused, "rms_norm"), (talker_fused, "silu_mul"), (transformer_fused, "rms_norm_rope")):
        counted(module, name)
    (want, want_state), (got, got_state) = stream(eager), stream(fused)
    steps = 1 + len(PLAN)  # the priming step and the plan's
    layers = CFG.num_hidden_layers
    want_calls = {"rms_norm": 2 * layers + 1, "silu_mul": layers, "rms_norm_rope": 2 * layers}  # a step's
    assert calls == {name: steps * n for name, n in want_calls.items()}
    assert len(got) == len(want)
    # The sums in another order differ by a few fp32 ulps of each value, and the vocoder's conv histories carry values
    # up to ~7 through the plan's steps: on a CI host with AVX-512 and AMX a history element was 1.2e-5 apart at a
    # magnitude near 1 (2026-12-06), past an absolute 1e-5, where other hosts' CPU GEMMs had stayed under it. So a
    # relative share too; a wrong norm, RoPE or GEMM would be off by 1e-3 or more.
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=2e-5)
    for g, w in zip(got_state.tensors(), want_state.tensors(), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=2e-5)


def test_one_frame_steps_equal_the_eager_ones():
    """The fused GEMM's [B, 1, N] output may carry any stride on its size-1 dim (run 91's graph checks failed there:
    "tokens must be evenly strided")."""
    fused = tiny_codec_decoder(torch.float32)
    fuse_transformer(fused)
    (want, want_state), (got, got_state) = one_frame_steps(tiny_codec_decoder(torch.float32)), one_frame_steps(fused)
    for g, w in zip(got + got_state.tensors(), want + want_state.tensors(), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_rope_reads_tokens_whatever_a_size_1_dim_says():
    b, heads, dim = 3, 2, 16
    qkv = torch.randn(b, 1, 3 * heads * dim, generator=torch.Generator().manual_seed(8))
    odd = qkv.as_strided(qkv.shape, (3 * heads * dim, heads * dim, 1))  # the same memory, stride(1) 32 as on CUDA
    x = odd[..., : heads * dim].view(b, 1, heads, dim)
    cos, sin = _cos_sin(2, 1, dim, torch.float32)
    cos, sin = cos.repeat(2, 1, 1, 1)[:b], sin.repeat(2, 1, 1, 1)[:b]
    want = rope_reference(x.transpose(1, 2), cos, sin)
    got = rms_norm_rope(x, None, 0.0, cos.transpose(1, 2), sin.transpose(1, 2)).transpose(1, 2)
    assert torch.equal(got, want)


def test_add_norm_kernel_equals_separate_adds_and_norms(monkeypatch):
    """The codec's `add_norm_kernel` over the fused transformer: each LayerScale'd residual add in one kernel with
    the norm after it, 2 per layer, fp32 to the bit (the same roundings, the norm the fused one's arithmetic; on the
    GPU see test_the_layer_scale_product_is_rounded_on_its_own_on_sm90); set off, the layer-by-layer forward
    again."""
    plain = tiny_codec_decoder(torch.float32)
    fuse_transformer(plain)
    model = tiny_codec_decoder(torch.float32)
    fuse_transformer(model)
    model.add_norm_kernel = True
    assert model.add_norm_kernel and not plain.add_norm_kernel
    calls = []
    real = transformer_fused.add_rms_norm
    monkeypatch.setattr(transformer_fused, "add_rms_norm", lambda *a, **k: calls.append(k["scale"]) or real(*a, **k))
    for want_run, got_run in ((stream(plain), stream(model)), (one_frame_steps(plain), one_frame_steps(model))):
        assert same_run(got_run, want_run)
    layers = model.pre_transformer.layers
    scales = [s for layer in layers for s in (layer.self_attn_layer_scale.scale, layer.mlp_layer_scale.scale)]
    steps = 1 + len(PLAN) + 3  # stream's priming step and its plan's, then one_frame_steps' three
    assert len(calls) == steps * len(scales) and all(c is s for c, s in zip(calls, scales * steps, strict=True))
    model.add_norm_kernel = False
    calls.clear()
    stream(model)
    assert not calls and not model.add_norm_kernel


@pytest.mark.parametrize(
    "dtype,others",
    [
        (torch.float32, {}),
        (torch.bfloat16, {}),
        (torch.bfloat16, {"window_kernel": True, "attention_kernel": True}),  # kernels reading the strided q and k
        (torch.float32, {"window_pair_kernel": True, "add_norm_kernel": True}),
    ],
)
def test_qk_rope_kernel_equals_rope_apart(monkeypatch, dtype, others):
    """The codec's `qk_rope_kernel` over the fused transformer: q and k by one RoPE launch a layer instead of two,
    to the bit (q and k are then views of one tensor, with other strides than apart); set off, two again."""
    plain, model = tiny_codec_decoder(dtype), tiny_codec_decoder(dtype)
    for decoder in (plain, model):
        fuse_transformer(decoder)
        for name, on in others.items():
            setattr(decoder, name, on)
    model.qk_rope_kernel = True
    assert model.qk_rope_kernel and not plain.qk_rope_kernel
    calls = []
    real = transformer_fused.rms_norm_rope
    monkeypatch.setattr(transformer_fused, "rms_norm_rope", lambda x, *a: calls.append(x.shape[2]) or real(x, *a))
    for want_run, got_run in ((stream(plain), stream(model)), (one_frame_steps(plain), one_frame_steps(model))):
        assert same_run(got_run, want_run)
    steps = 1 + len(PLAN) + 3  # stream's priming step and its plan's, then one_frame_steps' three
    layers, heads = CFG.num_hidden_layers, CFG.num_attention_heads + CFG.num_key_value_heads
    apart = [CFG.num_attention_heads, CFG.num_key_value_heads]  # the heads of each launch: q's, then k's
    assert sorted(calls) == sorted(apart * layers * steps + [heads] * layers * steps)
    model.qk_rope_kernel = False
    calls.clear()
    one_frame_steps(model)
    assert calls == apart * layers * 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_add_rms_norm_with_a_layer_scale(dtype):
    gen = torch.Generator().manual_seed(5)
    x, delta = (torch.randn(3, 2, 24, generator=gen) * 3).to(dtype), torch.randn(3, 2, 24, generator=gen).to(dtype)
    w, scale = (1 + torch.randn(24, generator=gen) * 0.1).to(dtype), (torch.rand(24, generator=gen) * 0.2).to(dtype)
    total, normed = transformer_fused.add_rms_norm(x, delta, w, 1e-5, scale=scale)
    want_total, want_normed = transformer_fused.add_rms_norm_reference(x, delta, w, 1e-5, scale=scale)
    if dtype == torch.float32:  # the eager roundings: the scaled delta, then the sum
        assert torch.equal(total, x + scale * delta) and torch.equal(normed, transformer_fused.rms_norm(total, w, 1e-5))
    else:  # the interpreter truncates its bf16 conversions (see test_rope_alone_equals_the_eager_rope)
        torch.testing.assert_close(total, want_total, rtol=0, atol=float(want_total.abs().max()) * 2**-6)
    torch.testing.assert_close(normed, want_normed, rtol=0, atol=float(want_normed.abs().max()) * 2**-6)
    with pytest.raises(ValueError, match="scale"):
        transformer_fused.add_rms_norm(x, delta, w, 1e-5, scale=scale[:5])


COMPILE = """
import re
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.transformer_fused import _rms_norm_rope_kernel

for dtype in ("bf16", "fp32"):
    signature = {name: f"*{dtype}" for name in ("x_ptr", "w_ptr", "cos_ptr", "sin_ptr", "out_ptr")}
    signature |= {name: "i32" for name in ("heads", "x_stride", "out_stride", "rope_stride")} | {"eps": "fp32"}
    signature |= {name: "constexpr" for name in ("HALF", "HEADS_PAD", "HALF_PAD", "NORM", "PDL")}
    for norm in (True, False):  # the talker's q/k norm + RoPE, and RoPE alone (the codec's)
        constexprs = {"HALF": 32, "HEADS_PAD": 16, "HALF_PAD": 32, "NORM": norm, "PDL": norm}
        source = ASTSource(_rms_norm_rope_kernel, signature, constexprs)
        ptx = compile(source, target=GPUTarget("cuda", 90, 32), options={"launch_pdl": norm}).asm["ptx"]
        assert ("sqrt" in ptx) == norm, "the norm's square root only where asked for"
        assert ("griddepcontrol.wait" in ptx) == norm, "the wait for the prior kernels only with PDL"
        # RoPE's products rounded on their own (the norm's sum of squares may use FMAs; it has no bf16 one)
        fmas = re.findall(r"\\bfma\\.[a-z0-9.]+", ptx)
        assert (fmas if not norm else [f for f in fmas if "bf16" in f]) == [], (dtype, norm, fmas)
print("compiled")
"""


def test_rope_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


COMPILE_ADD_NORM = r"""
import re
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.transformer_fused import _add_rms_norm_kernel

for dtype in ("fp32", "bf16"):
    pointers = ("x_ptr", "d_ptr", "scale_ptr", "w_ptr", "sum_ptr", "out_ptr")
    ints = ("n", "x_stride", "d_stride", "sum_stride", "out_stride")
    signature = {name: f"*{dtype}" for name in pointers} | {name: "i32" for name in ints} | {"eps": "fp32"}
    signature |= {name: "constexpr" for name in ("HAS_SCALE", "BLOCK", "PDL")}
    fmas = []
    for scale in (False, True):
        constexprs = {"HAS_SCALE": scale, "BLOCK": 512, "PDL": not scale}  # PDL: the talker's (no LayerScale)
        source = ASTSource(_add_rms_norm_kernel, signature, constexprs)
        ptx = compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1, "launch_pdl": not scale})
        ptx = ptx.asm["ptx"]
        assert ("griddepcontrol.launch_dependents" in ptx) == (not scale)
        fmas.append(len(re.findall(r"\bfma\.", ptx)))
    assert fmas[0] == fmas[1], (dtype, fmas)
print("compiled")
"""


def test_the_layer_scale_product_is_rounded_on_its_own_on_sm90(tmp_path):
    """Compiled for the H200, the LayerScale's product must not be contracted with the residual add into an FMA (it
    was in run 119, unrounded: fp32 and bf16 not bitwise against the separate kernels): with the scale, the kernel
    has no FMA the norm alone does not have."""
    done = compile_for_sm90(COMPILE_ADD_NORM, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
