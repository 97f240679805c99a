"""Triton kernels vs their PyTorch references, on CPU through the Triton interpreter (and on GPU when present)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.snakebeta import bias_residual, bias_residual_reference, snakebeta, snakebeta_reference

DEVICE = "cuda" if torch.cuda.is_available() and os.environ["TRITON_INTERPRET"] != "1" else "cpu"


def _inputs(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    alpha = torch.randn(shape[1], generator=gen) * 0.5
    beta = torch.randn(shape[1], generator=gen) * 0.5
    return x.to(DEVICE), alpha.to(DEVICE), beta.to(DEVICE)


# Odd lengths (not a multiple of any block), a single sample, one channel, lengths over one block.
SHAPES = [(1, 1, 1), (2, 3, 7), (3, 5, 129), (1, 16, 1000), (4, 2, 1025), (2, 7, 3001)]


@pytest.mark.parametrize("shape", SHAPES)
def test_snakebeta_fp32_matches_reference(shape):
    x, alpha, beta = _inputs(shape, torch.float32)
    got = snakebeta(x, alpha, beta)
    torch.testing.assert_close(got, snakebeta_reference(x, alpha, beta), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_snakebeta_bf16_within_one_rounding_of_fp32(shape):
    # The kernel computes in fp32 and rounds once on store, so against the fp32 reference of the same bf16 input
    # it is within one bf16 ulp (2^-7 relative): half an ulp on the GPU (round to nearest), a whole one under the
    # interpreter, whose fp32 -> bf16 store truncates.
    x, alpha, beta = _inputs(shape, torch.bfloat16, seed=1)
    got = snakebeta(x, alpha, beta)
    assert got.dtype == torch.bfloat16
    want = snakebeta_reference(x.float(), alpha, beta)
    torch.testing.assert_close(got.float(), want, rtol=2**-7, atol=1e-5)


def test_snakebeta_writes_into_strided_view_and_padding_rows():
    # A zero row (padding) and writing into the tail of a [history ‖ new] buffer; the history part is untouched.
    x, alpha, beta = _inputs((3, 4, 37), torch.float32, seed=2)
    x[1] = 0
    buffer = torch.full((3, 4, 6 + 37), 7.0, device=DEVICE)
    out = snakebeta(x, alpha, beta, out=buffer[..., 6:])
    assert out.data_ptr() == buffer[..., 6:].data_ptr()
    torch.testing.assert_close(buffer[..., 6:], snakebeta_reference(x, alpha, beta), rtol=1e-5, atol=1e-5)
    assert torch.all(buffer[..., :6] == 7.0)
    assert torch.all(buffer[1, :, 6:] == 0)


def test_snakebeta_non_contiguous_input():
    x, alpha, beta = _inputs((2, 37, 5), torch.float32, seed=3)
    xt = x.transpose(1, 2)  # [2, 5, 37] with a strided last dim
    alpha, beta = alpha[:5], beta[:5]
    torch.testing.assert_close(snakebeta(xt, alpha, beta), snakebeta_reference(xt, alpha, beta), rtol=1e-5, atol=1e-5)


def test_snakebeta_matches_codec_module():
    from omni.models.qwen3_tts.codec import SnakeBeta

    module = SnakeBeta(6).to(DEVICE)
    with torch.no_grad():
        module.alpha.normal_(0, 0.5)
        module.beta.normal_(0, 0.5)
        x = torch.randn(2, 6, 51, device=DEVICE)
        torch.testing.assert_close(snakebeta(x, module.alpha, module.beta), module(x), rtol=1e-5, atol=1e-5)


def test_snakebeta_bad_input_is_a_clear_error():
    x, alpha, beta = _inputs((2, 3, 8), torch.float32)
    with pytest.raises(ValueError, match=r"\[B, C, T\]"):
        snakebeta(x[0], alpha, beta)
    with pytest.raises(ValueError, match="alpha/beta"):
        snakebeta(x, alpha[:2], beta)
    with pytest.raises(ValueError, match="out must be"):
        snakebeta(x, alpha, beta, out=torch.empty(2, 3, 9, device=DEVICE))


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 7), (4, 2, 1025)])
def test_snakebeta_with_bias(shape):
    x, alpha, beta = _inputs(shape, torch.float32, seed=5)
    bias = torch.randn(shape[1], generator=torch.Generator().manual_seed(6)).to(DEVICE)
    got = snakebeta(x, alpha, beta, bias=bias)
    torch.testing.assert_close(got, snakebeta_reference(x, alpha, beta, bias), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="bias must be"):
        snakebeta(x, alpha, beta, bias=bias[:0])


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 7), (3, 5, 129), (4, 2, 1025)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bias_residual(shape, dtype):
    x, bias, _ = _inputs(shape, dtype, seed=7)
    y, _, _ = _inputs(shape, dtype, seed=8)
    got = bias_residual(x, y, bias)
    assert got.dtype == dtype
    want = bias_residual_reference(x.float(), y.float(), bias)
    # fp32 compute, one rounding on store: within one bf16 ulp (see the SnakeBeta bf16 test).
    rtol = 1e-6 if dtype == torch.float32 else 2**-7
    torch.testing.assert_close(got.float(), want, rtol=rtol, atol=1e-5)
    with pytest.raises(ValueError, match="bias_residual"):
        bias_residual(x, y[:, :, :0], bias)
