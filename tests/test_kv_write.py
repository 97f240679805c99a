"""The K/V cache write kernel against the index put it replaces, and the talker runner with it against without.

On CPU through the Triton interpreter; tools/bench_talker_step.py checks the same on the GPU (mode
fused+sampler+kv-write).
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.kv_write import write_kv

from tests.kernel_runners import PREFILLED_SLOTS, prefilled_runner_pair


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
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(3):
        assert torch.equal(with_kernel.decode_step(slots)[0], without.decode_step(slots)[0]), f"step {step}"
    for name in ("cache", "predictor_cache"):
        assert torch.equal(getattr(with_kernel, name).k, getattr(without, name).k)
        assert torch.equal(getattr(with_kernel, name).v, getattr(without, name).v)
    assert torch.equal(with_kernel.last_hidden, without.last_hidden)
