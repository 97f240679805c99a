"""The codec's RVQ decode through kernels/rvq_lookup.py (the codec's `rvq_kernel`) against the per-codebook lookups,
bit for bit: one RVQ group, the whole decoder streaming, and the divided codebooks computed again after a weight
load or a cast. On CPU through the Triton interpreter; tools/bench_codec.py --rvq-kernel checks the same on the GPU."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.rvq_lookup import lookup_sum

from omni.models.qwen3_tts.codec import ResidualVQ
from tests.codec_streams import one_frame_steps, same_run, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90


def _group(books: int, seed: int) -> ResidualVQ:
    """An RVQ group of `books` codebooks of 64 rows of 24 (padded to 32 in the kernel), with usage counts spread
    over eight decades, some under the 1e-5 clamp."""
    gen = torch.Generator().manual_seed(seed)
    group = ResidualVQ(books, 64, 24, 40)
    for vq in group.vq.layers:
        vq._codebook.embedding_sum.data = torch.randn(64, 24, generator=gen) * 3e-3
        vq._codebook.cluster_usage.data = 10 ** (torch.rand(64, generator=gen) * 8 - 6)
    group.output_proj.weight.data = torch.randn(40, 24, 1, generator=gen) / 5
    return group.eval()


def _both(group: ResidualVQ, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    outs = []
    for kernel in (False, True):
        group.lookup_kernel = kernel
        with torch.no_grad():
            outs.append(group(codes))
    return outs[0], outs[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_group_with_the_kernel_equals_the_lookups(dtype):
    group = _group(6, seed=2).to(dtype)
    # codes as SplitRVQ hands them over: a strided slice of [B, T, 16]
    codes = torch.randint(0, 64, (3, 5, 9), generator=torch.Generator().manual_seed(4))[..., 2:8]
    want, got = _both(group, codes)
    assert got.dtype == dtype and torch.equal(got, want)
    assert float(want.abs().max()) > 10  # the small usage counts divided: large sums, rounded on every add


def test_tables_follow_weight_loads_and_casts():
    group = _group(3, seed=5)
    codes = torch.randint(0, 64, (2, 4, 3), generator=torch.Generator().manual_seed(6))
    first, got = _both(group, codes)
    assert torch.equal(got, first)
    group.load_state_dict(_group(3, seed=7).state_dict())  # in place: the same storage, a newer version
    want, got = _both(group, codes)
    assert not torch.equal(want, first) and torch.equal(got, want)
    group.to(torch.bfloat16)
    want, got = _both(group, codes)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decoder_with_the_rvq_kernel_equals_without(dtype):
    runs = []
    for kernel in (False, True):
        model = tiny_codec_decoder(dtype)
        model.rvq_kernel = kernel
        assert model.quantizer.rvq_rest.lookup_kernel is kernel
        runs.append(stream(model))
    want, got = runs
    assert same_run(got, want)


def test_one_frame_steps_with_the_rvq_kernel_equal_without():
    runs = []
    for kernel in (False, True):
        model = tiny_codec_decoder(torch.bfloat16)
        model.rvq_kernel = kernel
        runs.append(one_frame_steps(model))
    want, got = runs
    assert same_run(got, want)


def test_bad_arguments_fail_clearly():
    tables = torch.zeros(3, 8, 4)
    with pytest.raises(ValueError, match="tables"):
        lookup_sum(tables.transpose(1, 2), torch.zeros(1, 2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="codes"):
        lookup_sum(tables, torch.zeros(1, 2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="codes"):
        lookup_sum(tables, torch.zeros(1, 2, 3))
    assert lookup_sum(tables, torch.zeros(0, 2, 3, dtype=torch.long)).shape == (0, 2, 4)


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.rvq_lookup import _lookup_sum_kernel

for dtype, rounding in (("fp32", 0), ("bf16", 1), ("fp16", 2)):
    signature = {"tables_ptr": f"*{dtype}", "codes_ptr": "*i64", "out_ptr": f"*{dtype}"}
    signature |= {name: "i32" for name in ("tokens", "books", "tokens_per_batch", "codes_stride_b",
        "codes_stride_t", "codes_stride_n", "table_stride_n")}
    signature |= {name: "constexpr" for name in ("DIM", "DIM_PAD", "BLOCK_T", "ROUND_TO")}
    constexprs = {"DIM": 256, "DIM_PAD": 256, "BLOCK_T": 16, "ROUND_TO": rounding}
    compiled = compile(ASTSource(_lookup_sum_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32))
    assert "ld.global" in compiled.asm["ptx"] and "st.global" in compiled.asm["ptx"]
print("compiled")
"""


def test_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
