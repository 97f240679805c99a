"""The fp8 K/V cache (the talker's `kv_cache_dtype` fp8): every write rounds as omni/fp8.py's `to_fp8`, every read
is an exact upcast, kernels and PyTorch paths alike; a runner and a service with it.

The kernels run on CPU through the Triton interpreter, and compile for sm_90 in a process of their own.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import asyncio
import copy
import re

import numpy as np
import pytest
import torch
from omni.kernels.decode_attention import decode_attention, decode_attention_reference, norm_rope_attention
from omni.kernels.kv_write import norm_rope_write_kv, write_kv
from omni.services.talker.config import TalkerConfig

from omni.fp8 import FP8_DTYPE, FP8_MAX, to_fp8
from omni.models.qwen3_tts.talker import CacheKernels, KVCache, rope_cos_sin, rope_frequencies
from omni.talker.generate import SynthesisOptions, Synthesizer, generate_codes
from omni.talker.model_runner import TalkerRunner
from tests.kernel_runners import PREFILLED_SLOTS, compile_for_sm90, prefill_two_requests
from tests.test_talker_service import CONTEXT, Running, collect, generate_request, speech

# Values a conversion can get wrong: ties between e4m3 neighbours (1.0625 lies between 1 and 1.125, to even: 1;
# 1.1875 between 1.125 and 1.25: 1.25; 2**-10 between 0 and the least subnormal 2**-9: 0), a carry into the next
# exponent (7.96 to 8), a small negative value (to -0), the largest finite value, and values past it, which saturate
# rather than turn into NaN.
EDGES = [1.0625, -1.0625, 1.1875, -1.1875, 2.0**-10, 3 * 2.0**-10, 7.96, -(2.0**-11), 448.0, 460.0, -1000.0, 5e4]


def _bits(x: torch.Tensor) -> torch.Tensor:
    return x.view(torch.uint8)


def _with_edges(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1).clone()
    flat[: len(EDGES)] = torch.tensor(EDGES)
    return flat.view_as(x)


def test_to_fp8_rounds_ties_to_even_and_saturates():
    got = to_fp8(torch.tensor(EDGES)).float().tolist()
    assert got == [1.0, -1.0, 1.25, -1.25, 0.0, 2.0**-8, 8.0, -0.0, 448.0, 448.0, -448.0, 448.0]
    assert str(got[7]) == "-0.0"
    assert FP8_MAX == float(torch.finfo(FP8_DTYPE).max)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("t", [1, 3])
def test_the_write_kernel_stores_what_to_fp8_gives(dtype, t):
    gen = torch.Generator().manual_seed(t)
    slots_n, length, heads, dim, b = 5, 8, 2, 16, 3
    k = _with_edges(torch.randn(b, t, heads, dim, generator=gen) * 4).to(dtype)
    v = _with_edges(torch.randn(b, t, heads, dim, generator=gen) * 200).to(dtype)
    slots = torch.tensor([4, 0, 2])
    positions = torch.stack([torch.randperm(length, generator=gen)[:t] for _ in range(b)])
    caches = [torch.zeros(slots_n, length, heads, dim, dtype=FP8_DTYPE) for _ in range(2)]
    write_kv(*caches, slots, positions, k, v)
    rows = slots[:, None]
    assert torch.equal(_bits(caches[0][rows, positions]), _bits(to_fp8(k)))
    assert torch.equal(_bits(caches[1][rows, positions]), _bits(to_fp8(v)))
    assert (caches[1].float().abs() == FP8_MAX).any()  # the values past 448 were there, and saturated


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_norm_rope_write_into_fp8_is_its_model_dtype_write_rounded(dtype):
    """q as before, and the caches hold `to_fp8` of what the same kernel writes into caches of the model's dtype: the
    norms and RoPE round in qkv's dtype, then the store rounds to fp8 (as a PyTorch write into an fp8 cache)."""
    gen = torch.Generator().manual_seed(7)
    heads, kv_heads, dim, b, t, slots_n, length = 4, 2, 16, 3, 2, 4, 6
    width = (heads + 2 * kv_heads) * dim
    qkv = (torch.randn(b, t, width, generator=gen) * 3).to(dtype)
    qw, kw = ((1 + torch.randn(dim, generator=gen) * 0.1).to(dtype) for _ in range(2))
    slots = torch.tensor([3, 0, 1])
    positions = torch.stack([torch.randperm(length, generator=gen)[:t] for _ in range(b)])
    cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, "cpu"), dtype)
    wide = [torch.zeros(slots_n, length, kv_heads, dim, dtype=dtype) for _ in range(2)]
    narrow = [torch.zeros(slots_n, length, kv_heads, dim, dtype=FP8_DTYPE) for _ in range(2)]
    want_q = norm_rope_write_kv(qkv, heads, (qw, 1e-6), (kw, 1e-6), cos, sin, *wide, slots, positions)
    q = norm_rope_write_kv(qkv, heads, (qw, 1e-6), (kw, 1e-6), cos, sin, *narrow, slots, positions)
    assert torch.equal(q, want_q) and q.dtype == dtype
    for got, want in zip(narrow, wide, strict=True):
        assert torch.equal(_bits(got), _bits(to_fp8(want)))
    assert not torch.equal(narrow[0].to(dtype), wide[0])  # fp8 rounded the keys: the check above could fail


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows_per_slot", [1, 2])
def test_decode_attention_over_fp8_is_attention_over_its_exact_upcast(dtype, rows_per_slot):
    """Over an fp8 cache the kernel gives the bits it gives over a cache of q's dtype holding the same values (the
    upcast is exact, the rest the same arithmetic), and the definition's result within the usual roundings."""
    gen = torch.Generator().manual_seed(rows_per_slot)
    rows, heads, kv_heads, dim, slots_n, length = 4, 16, 8, 128, 3, 130
    q = torch.randn(rows, heads, dim, generator=gen).to(dtype)
    k, v = (to_fp8(torch.randn(slots_n, length, kv_heads, dim, generator=gen) * 2) for _ in range(2))
    slots = torch.tensor([2, 0, 1, 2])[: rows // rows_per_slot]
    lengths = torch.tensor([130, 1, 77, 64])
    got = decode_attention(q, k, v, slots, lengths, rows_per_slot=rows_per_slot)
    same_values = decode_attention(q, k.to(dtype), v.to(dtype), slots, lengths, rows_per_slot=rows_per_slot)
    assert got.dtype == dtype and torch.equal(got, same_values)
    want = decode_attention_reference(q, k, v, slots.repeat_interleave(rows_per_slot), lengths)
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2**-7, "atol": 2**-6}  # an ulp
    torch.testing.assert_close(got.float(), want.float(), **tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_norm_rope_attention_over_fp8_equals_its_two_kernels(dtype):
    """The one-kernel pass (off by default) over fp8 caches: its output and caches as norm_rope_write_kv then
    decode_attention over fp8 give them, bit for bit (each program reads back the fp8 keys it wrote)."""
    gen = torch.Generator().manual_seed(11)
    heads, kv_heads, dim, b, slots_n, length = 16, 8, 128, 3, 4, 40
    qkv = (torch.randn(b, 1, (heads + 2 * kv_heads) * dim, generator=gen) * 3).to(dtype)
    norms = tuple(((1 + torch.randn(dim, generator=gen) * 0.1).to(dtype), 1e-6) for _ in range(2))
    slots, positions = torch.tensor([3, 0, 1]), torch.tensor([[0], [39], [17]])
    cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, "cpu"), dtype)
    caches = [to_fp8(torch.randn(slots_n, length, kv_heads, dim, generator=gen)) for _ in range(2)]
    want_caches = [c.clone() for c in caches]
    q = norm_rope_write_kv(qkv, heads, *norms, cos, sin, *want_caches, slots, positions)
    want = decode_attention(q.reshape(b, heads, dim), *want_caches, slots, positions[:, 0] + 1)
    got = norm_rope_attention(qkv, heads, *norms, cos, sin, *caches, slots, positions, positions[:, 0] + 1)
    assert got.dtype == dtype and torch.equal(got, want)
    assert all(torch.equal(_bits(g), _bits(w)) for g, w in zip(caches, want_caches, strict=True))


def test_kernels_refuse_caches_that_cannot_hold_their_values():
    q = torch.zeros(1, 4, 16)
    cache = torch.zeros(2, 8, 2, 16, dtype=torch.bfloat16)  # neither q's dtype nor fp8
    with pytest.raises(ValueError, match="cannot hold"):
        decode_attention(q, cache, cache.clone(), torch.tensor([0]), torch.tensor([3]))
    fp8 = torch.zeros(2, 8, 2, 16, dtype=FP8_DTYPE)
    with pytest.raises(ValueError, match="cannot hold"):  # k in fp8, v not
        decode_attention(q, fp8, torch.zeros(2, 8, 2, 16), torch.tensor([0]), torch.tensor([3]))
    k = torch.zeros(1, 1, 2, 16)
    with pytest.raises(ValueError, match="cannot hold"):
        write_kv(cache, cache.clone(), torch.tensor([0]), torch.tensor([[1]]), k, k)  # fp32 into bf16


def test_the_pytorch_cache_rounds_writes_and_upcasts_reads():
    cache = KVCache(2, 3, 5, 2, 8, dtype=FP8_DTYPE)
    gen = torch.Generator().manual_seed(0)
    k, v = (_with_edges(torch.randn(2, 2, 2, 8, generator=gen) * 50) for _ in range(2))
    slots, positions = torch.tensor([2, 0]), torch.tensor([[0, 1], [3, 4]])
    cache.write(1, slots, positions, k, v)
    assert torch.equal(_bits(cache.k[1, slots[:, None], positions]), _bits(to_fp8(k)))
    assert torch.equal(_bits(cache.v[1, slots[:, None], positions]), _bits(to_fp8(v)))
    keys, values = cache.read(1, slots, 5, torch.float32)
    assert keys.dtype == torch.float32 and torch.equal(keys, cache.k[1, slots, :5].float())
    assert torch.equal(values[1, 3:5], to_fp8(v[1]).float())


def _runner(model, fp8: bool) -> TalkerRunner:
    return TalkerRunner(model.talker, model.config, 3, 64, kv_cache_dtype=FP8_DTYPE if fp8 else None)


def test_a_runner_with_an_fp8_cache(tiny_model_dir):
    """Only the talker's cache is fp8 (half the bytes); after the prefill its first layer, whose K/V no attention
    read fed, holds the model-dtype runner's values rounded; through the kernels (fused talker, decode attention,
    K/V writes) a runner steps to the codes the PyTorch paths give over the same fp8 cache."""
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    model = synth.model
    wide, narrow = _runner(model, fp8=False), _runner(model, fp8=True)
    assert narrow.cache.k.dtype == FP8_DTYPE and narrow.predictor_cache.k.dtype == model.talker.codec_head.weight.dtype
    assert narrow.cache.k.nbytes * 4 == wide.cache.k.nbytes  # fp32 tiny model: a quarter
    for runner in (wide, narrow):
        prefill_two_requests(runner, synth)
    for slot in PREFILLED_SLOTS:
        assert torch.equal(_bits(narrow.cache.k[0, slot]), _bits(to_fp8(wide.cache.k[0, slot])))
        assert torch.equal(_bits(narrow.cache.v[0, slot]), _bits(to_fp8(wide.cache.v[0, slot])))

    from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels  # imports Triton: only where asked for

    talker = copy.deepcopy(model.talker)
    fuse_talker_kernels(talker)
    kernels = {"decode_kernel": True, "kv_write_kernel": True, "norm_rope_write_kernel": True}
    fused = TalkerRunner(talker, model.config, 3, 64, kv_cache_dtype=FP8_DTYPE, **kernels)
    assert fused.cache.kernels == CacheKernels(attention=True, write=True, norm_rope_write=True)
    prefill_two_requests(fused, synth)
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(3):
        assert torch.equal(fused.decode_step(slots)[0], narrow.decode_step(slots)[0]), f"step {step}"
    torch.testing.assert_close(fused.last_hidden, narrow.last_hidden, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        TalkerRunner(model.talker, model.config, 3, 64, kv_cache_dtype=torch.float16)  # neither fp32 nor fp8


def test_the_talker_service_with_an_fp8_cache_streams_the_runners_codes(tiny_model_dir, caplog):
    """`kv_cache_dtype: fp8`: the service's cache is fp8 (its size logged at start) and a greedy stream carries the
    codes an fp8 runner gives the same request; an unknown value is refused when the config is checked."""
    caplog.set_level("INFO", logger="omni.talker")
    model_dir = tiny_model_dir("custom_voice")
    synth = Synthesizer(model_dir)
    max_new = 12
    request = generate_request(synth, 1, None, max_new, greedy=True)

    async def scenario():
        async with Running(model_dir, kv_cache_dtype="fp8") as svc:
            assert svc.engine.runner.cache.k.dtype == FP8_DTYPE
            return (await collect(svc.stub, request))[0]

    codes = asyncio.run(scenario())
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("talker K/V cache")]
    slots = TalkerConfig().max_streams
    assert len(logged) == 1 and f"GiB of float8_e4m3fn ({slots} slots x {CONTEXT} positions)" in logged[0], logged
    assert re.search(r"positions\), [\d.]+ GiB left free on cpu$", logged[0]), logged
    options = SynthesisOptions(greedy=True, max_new_tokens=max_new)
    prompt = synth.builder.build(speech(1))
    runner = TalkerRunner(synth.model.talker, synth.model.config, 1, 256, kv_cache_dtype=FP8_DTYPE)
    (want,) = generate_codes(runner, [prompt], [synth.sampling_params(options)])
    assert len(codes) > 2
    np.testing.assert_array_equal(codes, want)
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        TalkerConfig(kv_cache_dtype="int8").validate()


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.decode_attention import _decode_attention_kernel
from omni.kernels.kv_write import _write_kv_kernel

target = GPUTarget("cuda", 90, 32)
# The K/V write into fp8 caches: the stores convert (cvt to e4m3 with the rounding named).
signature = {"k_ptr": "*bf16", "v_ptr": "*bf16", "k_cache_ptr": "*fp8e4nv", "v_cache_ptr": "*fp8e4nv",
             "slots_ptr": "*i64", "positions_ptr": "*i64", "N": "constexpr", "BLOCK": "constexpr", "PDL": "constexpr"}
for name in ("T", "k_stride_b", "k_stride_t", "v_stride_b", "v_stride_t", "pos_stride_b", "pos_stride_t",
             "cache_stride_s", "cache_stride_l"):
    signature[name] = "i32"
source = ASTSource(_write_kv_kernel, signature, {"N": 1024, "BLOCK": 1024, "PDL": False})
ptx = compile(source, target=target).asm["ptx"]
assert "cvt.rn.satfinite.e4m3x2.f32" in ptx, "no conversion to e4m3 by the hardware's rounding in the write"
# Decode attention at the backbone's launch (16 q heads, 8 kv heads of 128) over fp8 caches.
signature = {"q_ptr": "*bf16", "k_ptr": "*fp8e4nv", "v_ptr": "*fp8e4nv", "out_ptr": "*bf16", "slots_ptr": "*i64",
             "lengths_ptr": "*i32", "scale": "fp32"}
for name in ("q_stride_b", "q_stride_h", "cache_stride_s", "cache_stride_l", "cache_stride_h", "out_stride_b",
             "out_stride_h"):
    signature[name] = "i32"
constexprs = {"GROUP": 2, "GROUP_PAD": 16, "DIM": 128, "DIM_PAD": 128, "BLOCK_N": 64, "PRECISION": "ieee",
              "DOT_FP32": False, "ROWS_PER_SLOT": 1, "PDL": False}
signature |= {k: "constexpr" for k in constexprs}
ptx = compile(ASTSource(_decode_attention_kernel, signature, constexprs), target=target,
              options={"num_warps": 4, "num_stages": 3}).asm["ptx"]
assert "e4m3" in ptx and "mma" in ptx, "no upcast from e4m3, or no tensor-core dot"
print("compiled")
"""


def test_fp8_kernels_compile_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
