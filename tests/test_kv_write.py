"""The K/V cache write kernel against the index put it replaces, and the talker runner with it against without.

On CPU through the Triton interpreter; tools/bench_talker_step.py checks the same on the GPU (mode
fused+sampler+kv-write).
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.kv_write import norm_rope_write_kv, write_kv
from omni.kernels.transformer_fused import rms_norm_rope

from omni.models.qwen3_tts.talker import rope_cos_sin, rope_frequencies
from tests.kernel_runners import assert_same_steps_bit_for_bit, compile_for_sm90, prefilled_runner_pair


def _index_put(k_cache, v_cache, slots, positions, k, v):
    k_cache[slots[:, None], positions] = k
    v_cache[slots[:, None], positions] = v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("t", [1, 2, 5])
def test_write_equals_the_index_put_bit_for_bit(dtype, t):
    gen = torch.Generator().manual_seed(t)
    slots_n, length, heads, dim, b = 6, 12, 3, 8, 4
    caches = [torch.randn(slots_n, length, heads, dim, generator=gen).to(dtype) for _ in range(2)]
    # v is a slice of a wider tensor, as the fused QKV projection's output: each token's heads x dim contiguous,
    # tokens `3 * heads * dim` apart.
    qkv = torch.randn(b, t, 3 * heads * dim, generator=gen).to(dtype)
    k = torch.randn(b, t, heads, dim, generator=gen).to(dtype)
    v = qkv[..., 2 * heads * dim :].view(b, t, heads, dim)
    slots = torch.tensor([5, 0, 3, 2])
    positions = torch.stack([torch.randperm(length, generator=gen)[:t] for _ in range(b)])  # distinct per slot
    want = [c.clone() for c in caches]
    _index_put(*want, slots, positions, k, v)
    write_kv(*caches, slots, positions, k, v)
    assert torch.equal(caches[0], want[0]) and torch.equal(caches[1], want[1])
    assert not torch.equal(want[0], want[1])  # k and v went to their own caches


def test_bad_inputs_fail_clearly():
    cache = torch.zeros(2, 4, 2, 8)
    k = torch.zeros(1, 1, 2, 8)
    slots, positions = torch.tensor([0]), torch.tensor([[1]])
    with pytest.raises(ValueError, match="dtype"):
        write_kv(cache, cache.clone(), slots, positions, k.double(), k.double())
    with pytest.raises(ValueError, match="contiguous"):
        strided = torch.zeros(1, 1, 8, 2).transpose(2, 3)  # heads x dim not one run
        write_kv(cache, cache.clone(), slots, positions, strided, strided)
    with pytest.raises(ValueError, match="fit"):
        write_kv(cache, cache.clone(), slots, positions, torch.zeros(1, 1, 3, 8), torch.zeros(1, 1, 3, 8))
    with pytest.raises(ValueError, match="positions"):
        write_kv(cache, cache.clone(), slots, torch.tensor([1]), k, k)


def test_runner_with_the_write_kernel_equals_runner_without(tiny_model_dir):
    without, with_kernel = prefilled_runner_pair(tiny_model_dir("custom_voice"), kv_write_kernel=True)
    assert with_kernel.cache.kernels.write and with_kernel.predictor_cache.kernels.write
    assert_same_steps_bit_for_bit(without, with_kernel, steps=3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("heads,kv_heads,dim,t", [(4, 2, 16, 1), (16, 8, 128, 1), (3, 1, 12, 2), (4, 2, 16, 5)])
def test_norm_rope_write_equals_the_three_kernels_bit_for_bit(dtype, heads, kv_heads, dim, t):
    """q, and the caches after, as `rms_norm_rope` on q and on k and `write_kv` give them: the same arithmetic
    (transformer_fused._store_norm_rope), so the same bits even under the interpreter."""
    gen = torch.Generator().manual_seed(heads + t)
    b, slots_n, length = 3, 5, 9
    width = (heads + 2 * kv_heads) * dim
    qkv = torch.randn(b, t, width + 8, generator=gen).to(dtype)[..., :width]  # rows wider than q | k | v
    qw, kw = ((1 + torch.randn(dim, generator=gen) * 0.1).to(dtype) for _ in range(2))
    slots = torch.tensor([4, 0, 2])
    positions = torch.stack([torch.randperm(length, generator=gen)[:t] for _ in range(b)])
    cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, "cpu"), dtype)
    caches = [torch.randn(slots_n, length, kv_heads, dim, generator=gen).to(dtype) for _ in range(2)]
    want_caches = [c.clone() for c in caches]
    nq, nk = heads * dim, kv_heads * dim
    want_q = rms_norm_rope(qkv[..., :nq], qw, 1e-6, cos, sin)
    k = rms_norm_rope(qkv[..., nq : nq + nk], kw, 1e-5, cos, sin)
    write_kv(*want_caches, slots, positions, k, qkv[..., nq + nk :].view(b, t, kv_heads, dim))
    q = norm_rope_write_kv(qkv, heads, (qw, 1e-6), (kw, 1e-5), cos, sin, *caches, slots, positions)
    assert torch.equal(q, want_q)
    assert torch.equal(caches[0], want_caches[0]) and torch.equal(caches[1], want_caches[1])


def test_norm_rope_write_rejects_what_it_cannot_hold():
    cache = torch.zeros(2, 4, 2, 8)
    qkv = torch.zeros(1, 1, (4 + 4) * 8)
    norm = (torch.ones(8), 1e-6)
    cos = sin = torch.ones(1, 1, 1, 8)
    slots, positions = torch.tensor([0]), torch.tensor([[1]])
    with pytest.raises(ValueError, match="heads"):
        norm_rope_write_kv(qkv, 3, norm, norm, cos, sin, cache, cache.clone(), slots, positions)
    with pytest.raises(ValueError, match="dtype"):
        norm_rope_write_kv(qkv.double(), 4, norm, norm, cos, sin, cache, cache.clone(), slots, positions)
    with pytest.raises(ValueError, match="positions"):
        norm_rope_write_kv(qkv, 4, norm, norm, cos, sin, cache, cache.clone(), slots, torch.tensor([1]))


def test_fused_runner_with_the_norm_rope_write_kernel_equals_it_without(tiny_model_dir):
    """A fused talker (fp32): each attention's q/k norms, RoPE and K/V write in one kernel against the three it
    replaces, over prefill and decode steps: the same codes, caches and hidden state to the bit."""
    checkpoint = tiny_model_dir("custom_voice")
    without, with_kernel = prefilled_runner_pair(
        checkpoint, fused=True, common={"kv_write_kernel": True}, norm_rope_write_kernel=True
    )
    assert with_kernel.cache.kernels.norm_rope_write and not without.cache.kernels.norm_rope_write
    assert with_kernel.predictor_cache.kernels.norm_rope_write
    assert_same_steps_bit_for_bit(without, with_kernel, steps=2)


def test_an_unfused_talker_ignores_the_norm_rope_write_kernel(tiny_model_dir):
    """The flag asks the fused attention modules; the eager ones keep their three steps (and the same results)."""
    without, with_flag = prefilled_runner_pair(tiny_model_dir("custom_voice"), norm_rope_write_kernel=True)
    assert_same_steps_bit_for_bit(without, with_flag, steps=1)


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.kv_write import _norm_rope_write_kernel, _write_kv_kernel

pointers = ("qkv_ptr", "qw_ptr", "kw_ptr", "cos_ptr", "sin_ptr", "q_ptr", "k_cache_ptr", "v_cache_ptr")
signature = {**{p: "*bf16" for p in pointers}, "slots_ptr": "*i64", "positions_ptr": "*i64"}
for name in ("T", "qkv_stride", "rope_stride", "pos_stride_b", "pos_stride_t", "cache_stride_s", "cache_stride_l"):
    signature[name] = "i32"
signature |= {"q_eps": "fp32", "k_eps": "fp32"}
# The 1.7B talker's attention (16 q heads, 8 kv heads of 128) and its code predictor's.
constexprs = {"HEADS": 16, "KV_HEADS": 8, "HALF": 64, "HEADS_PAD": 16, "KV_HEADS_PAD": 8, "HALF_PAD": 64,
              "V_BLOCK": 1024, "PDL": False}
signature |= {k: "constexpr" for k in constexprs}
for pdl in (False, True):
    source = ASTSource(_norm_rope_write_kernel, signature, constexprs | {"PDL": pdl})
    ptx = compile(source, target=GPUTarget("cuda", 90, 32), options={"launch_pdl": pdl}).asm["ptx"]
    assert "sqrt" in ptx and ("griddepcontrol.wait" in ptx) == pdl
# The plain K/V write, which shares the token-to-cache-row mapping with it.
signature = {"k_ptr": "*bf16", "v_ptr": "*bf16", "k_cache_ptr": "*bf16", "v_cache_ptr": "*bf16", "slots_ptr": "*i64",
             "positions_ptr": "*i64", "N": "constexpr", "BLOCK": "constexpr", "PDL": "constexpr"}
for name in ("T", "k_stride_b", "k_stride_t", "v_stride_b", "v_stride_t", "pos_stride_b", "pos_stride_t",
             "cache_stride_s", "cache_stride_l"):
    signature[name] = "i32"
source = ASTSource(_write_kv_kernel, signature, {"N": 1024, "BLOCK": 1024, "PDL": True})
assert "griddepcontrol.wait" in compile(source, GPUTarget("cuda", 90, 32), options={"launch_pdl": True}).asm["ptx"]
print("compiled")
"""


def test_kv_write_kernels_compile_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
