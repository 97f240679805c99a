"""The decode-attention kernel against its PyTorch definition, and the talker runner with it against without.

On CPU through the Triton interpreter; tools/bench_talker_step.py checks the same on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.decode_attention import decode_attention, decode_attention_reference

from tests.kernel_runners import PREFILLED_SLOTS, prefilled_runner_pair

# (rows, heads, kv heads, head dim, cache slots, cache length): GQA groups 1, 2 and 4, the real 16/8 × 128,
# a non-power-of-two head dim, lengths across several key blocks and a single key.
SHAPES = [
    (3, 4, 2, 16, 5, 70),
    (1, 16, 8, 128, 2, 130),
    (4, 2, 2, 32, 6, 9),
    (5, 8, 2, 12, 3, 200),
    (2, 4, 1, 64, 2, 1),
]


def _inputs(shape, dtype, seed):
    rows, heads, kv_heads, dim, slots, length = shape
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(rows, heads, dim, generator=gen).to(dtype)
    k = torch.randn(slots, length, kv_heads, dim, generator=gen).to(dtype)
    v = torch.randn(slots, length, kv_heads, dim, generator=gen).to(dtype)
    slot_ids = torch.randint(0, slots, (rows,), generator=gen)
    lengths = torch.randint(1, length + 1, (rows,), generator=gen)
    lengths[0] = length  # one row reads the whole cache
    return q, k, v, slot_ids, lengths


@pytest.mark.parametrize("shape", SHAPES)
def test_fp32_matches_reference(shape):
    q, k, v, slots, lengths = _inputs(shape, torch.float32, seed=0)
    torch.testing.assert_close(
        decode_attention(q, k, v, slots, lengths), decode_attention_reference(q, k, v, slots, lengths)
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_bf16_within_one_rounding(shape):
    # fp32 accumulation; the roundings are the probabilities to bf16 (as flash attention) and the final store
    # (which the interpreter truncates): within about one bf16 ulp of outputs of magnitude <= 2.
    q, k, v, slots, lengths = _inputs(shape, torch.bfloat16, seed=1)
    got = decode_attention(q, k, v, slots, lengths)
    want = decode_attention_reference(q, k, v, slots, lengths)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=0, atol=2**-6)


def test_keys_past_the_length_are_never_read():
    q, k, v, _, _ = _inputs((3, 4, 2, 16, 3, 50), torch.float32, seed=2)
    slots, lengths = torch.tensor([2, 0, 1]), torch.tensor([1, 17, 33])
    before = decode_attention(q, k, v, slots, lengths)
    k2, v2 = k.clone(), v.clone()
    for slot, length in zip(slots.tolist(), lengths.tolist(), strict=True):  # NaN in every dead position
        k2[slot, length:], v2[slot, length:] = float("nan"), float("nan")
    torch.testing.assert_close(decode_attention(q, k2, v2, slots, lengths), before)


def test_bad_head_counts_fail_clearly():
    q, k, v, slots, lengths = _inputs((2, 3, 2, 16, 2, 8), torch.float32, seed=3)
    with pytest.raises(ValueError, match="multiple"):
        decode_attention(q, k, v, slots, lengths)


@pytest.mark.parametrize("rows_per_slot", [2, 3])
def test_rows_per_slot_read_the_slot_of_their_group(rows_per_slot):
    """T rows a slot (a T-position pass, slot-major): each row attends to its group's slot, the same bits as the
    slots repeated T times; slots that do not make the rows fail clearly."""
    q, k, v, _, lengths = _inputs((6, 4, 2, 16, 5, 40), torch.bfloat16, seed=4)
    slots = torch.tensor([4, 1, 3])[: 6 // rows_per_slot]
    got = decode_attention(q, k, v, slots, lengths, rows_per_slot=rows_per_slot)
    assert torch.equal(got, decode_attention(q, k, v, slots.repeat_interleave(rows_per_slot), lengths))
    assert not torch.equal(got, decode_attention(q, k, v, slots.repeat(rows_per_slot), lengths))  # not slot-minor
    with pytest.raises(ValueError, match="rows_per_slot"):
        decode_attention(q, k, v, slots, lengths)


def test_runner_with_kernel_equals_runner_without(tiny_model_dir):
    without, with_kernel = prefilled_runner_pair(tiny_model_dir("custom_voice"), decode_kernel=True)
    assert with_kernel.predictor_cache.kernel_positions == 2  # the predictor's 2-position pass goes through it too
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(4):  # the interpreter runs ~100 kernel calls per step: keep it short
        want_codes, want_finished = without.decode_step(slots)
        got_codes, got_finished = with_kernel.decode_step(slots)
        assert torch.equal(got_codes, want_codes), f"step {step}"
        assert torch.equal(got_finished, want_finished)
    torch.testing.assert_close(with_kernel.last_hidden, without.last_hidden, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("positions_per_slot", [1, 2])
def test_short_pass_through_the_kernel_equals_the_masked_pass(positions_per_slot):
    # The code predictor's first pass of a frame has 2 positions per slot: with the kernel, one kernel row per
    # (slot, position), each reading keys 0..position of its own slot, as the causal mask does.
    from omni.models.qwen3_tts.config import TransformerConfig
    from omni.models.qwen3_tts.talker import CacheKernels, Decoder

    torch.manual_seed(0)
    cfg = TransformerConfig(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, vocab_size=64, rope_theta=10000.0, rms_norm_eps=1e-6, max_position_embeddings=64,
    )  # fmt: skip
    decoder = Decoder(cfg).eval()
    caches = [decoder.new_cache(4, 16, torch.float32, "cpu", CacheKernels(attention=flag)) for flag in (False, True)]
    assert [c.kernel_positions for c in caches] == [0, 2]
    kernel_rows = []  # the real kernel, with the rows of each call recorded

    def counted(q, *args, **kwargs):
        kernel_rows.append(q.shape[0])
        return decode_attention(q, *args, **kwargs)

    caches[1].decode_attention = counted
    slots = torch.tensor([3, 0, 2])
    prefix = torch.randn(4, 6, 32)  # every slot's first 6 positions, written by a masked pass
    starts = torch.tensor([6, 2, 5])  # each slot's pass starts at its own position
    positions = starts[:, None] + torch.arange(positions_per_slot)[None, :]
    x = torch.randn(3, positions_per_slot, 32)
    with torch.no_grad():
        outs = []
        for cache in caches:
            decoder(prefix, torch.arange(6).expand(4, 6), cache, torch.arange(4), kv_len=6)
            outs.append(decoder(x, positions, cache, slots, kv_len=8))
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(caches[1].k, caches[0].k)
    assert kernel_rows == [3 * positions_per_slot] * 2  # the short pass's two layers went through it, the prefix not
    with pytest.raises(ValueError, match="positions"):
        CacheKernels(attention=True, positions=0)
