"""The one-position attention kernel from a QKV GEMM's output (`norm_rope_attention`) against the two kernels it
replaces (kv_write.norm_rope_write_kv, then decode_attention), and a fused talker runner with it against without.

On CPU through the Triton interpreter, which sums in one order whatever the layout: the same bits here says the code
is the same, not that a GPU's order is (run 202 found a first version a rounding apart there; runs 203 and 206-207
this one equal at the backbone's launch, the kernels alone and the step). tools/bench_talker_step.py's
+norm-rope-attention check compares them on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.decode_attention import decode_attention, norm_rope_attention
from omni.kernels.kv_write import norm_rope_write_kv

from omni.models.qwen3_tts.talker import Qwen3TTSTalker, rope_cos_sin, rope_frequencies
from omni.talker.generate import Synthesizer
from omni.talker.model_runner import TalkerRunner
from tests.kernel_runners import assert_same_steps_bit_for_bit, compile_for_sm90, prefilled_runner_pair


def _pass_inputs(heads, kv_heads, dim, dtype, seed, length=40):
    """A one-position pass of 4 rows in distinct slots of 6: qkv rows wider than q | k | v, norms, RoPE at each row's
    position, caches of random values, key counts position + 1 (one row at position 0, one at the cache's end)."""
    gen = torch.Generator().manual_seed(seed)
    b, slots_n = 4, 6
    width = (heads + 2 * kv_heads) * dim
    qkv = torch.randn(b, 1, width + 8, generator=gen).to(dtype)[..., :width]
    norms = tuple(((1 + torch.randn(dim, generator=gen) * 0.1).to(dtype), eps) for eps in (1e-6, 1e-5))
    slots = torch.tensor([5, 0, 3, 2])
    positions = torch.tensor([[0], [length - 1], [17], [3]])
    cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, "cpu"), dtype)
    caches = [torch.randn(slots_n, length, kv_heads, dim, generator=gen).to(dtype) for _ in range(2)]
    return qkv, norms, (cos, sin), caches, slots, positions, positions[:, 0] + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("heads,kv_heads,dim", [(4, 2, 16), (16, 8, 128), (3, 1, 12), (4, 4, 16)])
def test_equals_the_two_kernels_bit_for_bit(dtype, heads, kv_heads, dim):
    """The output and both caches after, as norm_rope_write_kv then decode_attention give them (the same arithmetic:
    transformer_fused._store_norm_rope, then the attention's one copy), over GQA groups 1, 2 and 3, a head dim that is
    not a power of two and key counts from 1 to the whole cache."""
    qkv, norms, rope, caches, slots, positions, lengths = _pass_inputs(heads, kv_heads, dim, dtype, seed=heads + dim)
    want_caches = [c.clone() for c in caches]
    q = norm_rope_write_kv(qkv, heads, *norms, *rope, *want_caches, slots, positions)
    want = decode_attention(q.reshape(4, heads, dim), *want_caches, slots, lengths)
    got = norm_rope_attention(qkv, heads, *norms, *rope, *caches, slots, positions, lengths)
    assert torch.equal(got, want)
    assert torch.equal(caches[0], want_caches[0]) and torch.equal(caches[1], want_caches[1])
    assert not torch.equal(want_caches[0][slots[0], 0], caches[0].new_zeros(kv_heads, dim))  # the key was written


def test_rejects_what_it_cannot_hold():
    qkv, norms, rope, caches, slots, positions, lengths = _pass_inputs(4, 2, 16, torch.float32, seed=1)
    with pytest.raises(ValueError, match="one position a row"):
        two = torch.cat([qkv, qkv], dim=1)
        norm_rope_attention(two, 4, *norms, *rope, *caches, slots, positions.repeat(1, 2), lengths)
    with pytest.raises(ValueError, match="heads"):
        norm_rope_attention(qkv, 3, *norms, *rope, *caches, slots, positions, lengths)
    with pytest.raises(ValueError, match="lengths"):
        norm_rope_attention(qkv, 4, *norms, *rope, *caches, slots, positions, lengths[:2])


def test_fused_runner_with_the_kernel_equals_it_without(tiny_model_dir):
    """A fused talker (fp32) with the norm + RoPE + write kernel: its one-position backbone passes through the one
    kernel against the two, over decode steps: the same codes, caches and hidden state to the bit. The kernel runs in
    every backbone layer pass (counted), and only there: the code predictor's passes keep the two (its cache does not
    ask for it)."""
    common = {"decode_kernel": True, "kv_write_kernel": True, "norm_rope_write_kernel": True}
    without, with_kernel = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=True, common=common, norm_rope_attention_kernel=True
    )
    assert with_kernel.cache.kernels.norm_rope_attention and not with_kernel.predictor_cache.kernels.norm_rope_attention
    assert with_kernel.predictor_cache.kernels.norm_rope_write
    calls = []  # each call's positions (qkv's T), the kernel still run

    def counted(kernel):
        return lambda qkv, *args: calls.append(qkv.shape[1]) or kernel(qkv, *args)

    for cache in (with_kernel.cache, with_kernel.predictor_cache):
        cache.norm_rope_attention = counted(cache.norm_rope_attention)
    steps = 2
    assert_same_steps_bit_for_bit(without, with_kernel, steps=steps)
    assert calls == [1] * steps * with_kernel.config.talker.num_hidden_layers


def test_the_runner_refuses_it_without_the_kernels_it_extends(tiny_model_dir):
    model = Synthesizer(tiny_model_dir("custom_voice")).model
    with pytest.raises(ValueError, match="norm_rope_write_kernel"):
        TalkerRunner(model.talker, model.config, 2, 16, decode_kernel=True, norm_rope_attention_kernel=True)
    with pytest.raises(ValueError, match="decode-attention"):
        TalkerRunner(model.talker, model.config, 2, 16, decode_kernel=False, norm_rope_write_kernel=True,
                     norm_rope_attention_kernel=True)  # fmt: skip


def test_the_talker_setting_is_off_by_default_and_needs_the_norm_rope_write_kernel(tiny_model_dir):
    """Off until its GPU A/B; asked for (here from the environment), it reaches the runner only with the norm + RoPE +
    write kernel and the fused kernels on CUDA: turning either off turns it off too, with no error."""
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import apply_kernels

    talker_config = Synthesizer(tiny_model_dir("custom_voice")).model.config.talker
    asked = load_config(TalkerConfig, "talker", env={"OMNI_TALKER_NORM_ROPE_ATTENTION_KERNEL": "1"})
    assert not TalkerConfig().norm_rope_attention_kernel and asked.norm_rope_attention_kernel
    built = []
    for settings in (TalkerConfig(), asked, TalkerConfig(norm_rope_attention_kernel=True, norm_rope_write_kernel=False),
                     TalkerConfig(norm_rope_attention_kernel=True, fused_kernels=False)):  # fmt: skip
        settings.validate()
        kernels = apply_kernels(Qwen3TTSTalker(talker_config).eval(), settings, on_cuda=True)
        built.append(kernels["norm_rope_attention_kernel"])
    assert built == [False, True, False, False]


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.decode_attention import _norm_rope_attention_kernel

pointers = ("qkv_ptr", "qw_ptr", "kw_ptr", "cos_ptr", "sin_ptr", "q_ptr", "k_ptr", "v_ptr", "out_ptr")
signature = {**{p: "*bf16" for p in pointers}, "slots_ptr": "*i64", "positions_ptr": "*i64", "lengths_ptr": "*i64"}
signature |= {name: "fp32" for name in ("scale", "q_eps", "k_eps")}
for name in ("qkv_stride", "rope_stride", "pos_stride", "cache_stride_s", "cache_stride_l", "cache_stride_h"):
    signature[name] = "i32"
# The 1.7B talker's attention and its code predictor's (16 q heads, 8 kv heads of 128), at both launches.
constexprs = {"HEADS": 16, "KV_HEADS": 8, "HALF": 64, "HEADS_PAD": 16, "KV_HEADS_PAD": 8, "HALF_PAD": 64,
              "V_BLOCK": 1024, "GROUP": 2, "GROUP_PAD": 16, "DIM_PAD": 128, "PRECISION": "ieee", "DOT_FP32": False}
signature |= {k: "constexpr" for k in (*constexprs, "BLOCK_N", "PDL")}
for block_n, stages in ((64, 3), (16, 2)):
    for pdl in (False, True):
        source = ASTSource(_norm_rope_attention_kernel, signature, constexprs | {"BLOCK_N": block_n, "PDL": pdl})
        options = {"num_warps": 4, "num_stages": stages, "launch_pdl": pdl}  # norm_rope_write_kv's warps
        ptx = compile(source, target=GPUTarget("cuda", 90, 32), options=options).asm["ptx"]
        assert "bar.sync" in ptx and "sqrt" in ptx and ("griddepcontrol.wait" in ptx) == pdl
print("compiled")
"""


def test_the_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
