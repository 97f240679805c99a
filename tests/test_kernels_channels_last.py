"""Channels-last SnakeBeta and bias + residual kernels vs the PyTorch references, on CPU (Triton interpreter)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.channels_last import bias_residual_cl, channels_last_empty, is_channels_last, snakebeta_cl
from omni.kernels.snakebeta import bias_residual_reference, snakebeta_reference

from tests.kernel_runners import compile_for_sm90
from tests.tool_modules import load_tool

DEVICE = "cuda" if torch.cuda.is_available() and os.environ["TRITON_INTERPRET"] != "1" else "cpu"


def _channels_last(shape, dtype, seed, scale=3.0):
    """A random [B, C, T] tensor with [B, T, C] memory."""
    b, c, t = shape
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(b, t, c, generator=gen) * scale).to(dtype).to(DEVICE).transpose(1, 2)


def _params(channels, seed):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(channels, generator=gen) * 0.5).to(DEVICE) for _ in range(3)]  # alpha, beta, bias


# Odd lengths and channel counts (not multiples of any block); tiles of 32 elements force several programs along
# both T and C (block_c = 32 at most), the default tile one program per row here.
SHAPES = [(1, 1, 1), (2, 3, 7), (3, 5, 29), (2, 40, 9), (1, 70, 5)]
TILES = [32, None]


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("shape", SHAPES)
def test_snakebeta_cl_fp32_matches_reference(shape, tile):
    x = _channels_last(shape, torch.float32, seed=0)
    alpha, beta, bias = _params(shape[1], seed=1)
    kwargs = {} if tile is None else {"tile": tile}
    got = snakebeta_cl(x, alpha, beta, **kwargs)
    assert is_channels_last(got) and got.shape == x.shape
    torch.testing.assert_close(got, snakebeta_reference(x, alpha, beta), rtol=1e-5, atol=1e-5)
    got = snakebeta_cl(x, alpha, beta, bias=bias, **kwargs)
    torch.testing.assert_close(got, snakebeta_reference(x, alpha, beta, bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_snakebeta_cl_bf16_within_one_rounding_of_fp32(shape):
    # fp32 compute, one rounding on store: within one bf16 ulp (2^-7 relative) of the fp32 reference of the same
    # bf16 input (the interpreter's store truncates; the GPU rounds to nearest, half an ulp).
    x = _channels_last(shape, torch.bfloat16, seed=2)
    alpha, beta, bias = _params(shape[1], seed=3)
    got = snakebeta_cl(x, alpha, beta, bias=bias)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), snakebeta_reference(x.float(), alpha, beta, bias), rtol=2**-7, atol=1e-5)


def test_snakebeta_cl_from_a_slice_into_a_history_buffer_with_padding_rows():
    # The vocoder's pattern: x is a slice along T of a transposed conv's output, out the tail of a [history ‖ new]
    # buffer; a zero (padding) row stays zero and the history part is untouched.
    y = _channels_last((3, 6, 50), torch.float32, seed=4)
    x = y[..., 4:41]  # [3, 6, 37], strides (300, 1, 6)
    x[1] = 0
    alpha, beta, _ = _params(6, seed=5)
    buffer = channels_last_empty(3, 6, 5 + 37, x).fill_(7.0)
    out = snakebeta_cl(x, alpha, beta, out=buffer[..., 5:], tile=32)
    assert out.data_ptr() == buffer[..., 5:].data_ptr()
    torch.testing.assert_close(buffer[..., 5:], snakebeta_reference(x, alpha, beta), rtol=1e-5, atol=1e-5)
    assert torch.all(buffer[..., :5] == 7.0)
    assert torch.all(buffer[1, :, 5:] == 0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("dtype", "tile"), [(torch.float32, 32), (torch.bfloat16, None)])
def test_bias_residual_cl(shape, dtype, tile):
    # x as a slice along T (the transposed conv's trimmed output), y dense (a conv output), a zero padding row.
    x = _channels_last((shape[0], shape[1], shape[2] + 3), dtype, seed=6)[..., 1 : shape[2] + 1]
    y = _channels_last(shape, dtype, seed=7)
    y[0] = 0
    _, _, bias = _params(shape[1], seed=8)
    kwargs = {} if tile is None else {"tile": tile}
    got = bias_residual_cl(x, y, bias, **kwargs)
    assert got.dtype == dtype and is_channels_last(got) and got.transpose(1, 2).is_contiguous()
    want = bias_residual_reference(x.float(), y.float(), bias)
    rtol = 1e-6 if dtype == torch.float32 else 2**-7  # one rounding on store, as above
    torch.testing.assert_close(got.float(), want, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("dtype", "tile"), [(torch.float32, 32), (torch.bfloat16, None), (torch.float16, 32)])
def test_bias_residual_cl_with_snake_equals_the_two_kernels(shape, dtype, tile):
    # The vocoder's residual_snake_kernel: the sum as bias_residual_cl alone returns it, and in the tail of the next
    # conv's [history ‖ new] buffer (history untouched) the bits snakebeta_cl gives on that sum.
    b, c, t = shape
    x = _channels_last((b, c, t + 3), dtype, seed=14)[..., 1 : t + 1]
    y = _channels_last(shape, dtype, seed=15)
    alpha, beta, bias = _params(c, seed=16)
    kwargs = {} if tile is None else {"tile": tile}
    buffer = channels_last_empty(b, c, 4 + t, x).fill_(7.0)
    got = bias_residual_cl(x, y, bias, snake=(alpha, beta), snake_out=buffer[..., 4:], **kwargs)
    want = bias_residual_cl(x, y, bias, **kwargs)
    assert torch.equal(got, want)
    assert torch.equal(buffer[..., 4:], snakebeta_cl(want, alpha, beta, **kwargs))
    assert torch.all(buffer[..., :4] == 7.0)
    assert not torch.equal(buffer[..., 4:], want)  # the SnakeBeta ran: it adds sin^2 / e^beta


def test_bad_input_is_a_clear_error():
    x = _channels_last((2, 3, 8), torch.float32, seed=9)
    alpha, beta, bias = _params(3, seed=10)
    with pytest.raises(ValueError, match=r"\[B, C, T\]"):
        snakebeta_cl(x[0], alpha, beta)
    with pytest.raises(ValueError, match="alpha/beta"):
        snakebeta_cl(x, alpha[:2], beta)
    with pytest.raises(ValueError, match="bias must be"):
        snakebeta_cl(x, alpha, beta, bias=bias[:1])
    with pytest.raises(ValueError, match="channels-last"):
        snakebeta_cl(x.contiguous(), alpha, beta)  # [B, C, T] memory
    with pytest.raises(ValueError, match="out must be"):
        snakebeta_cl(x, alpha, beta, out=torch.empty(2, 3, 8, device=DEVICE))
    with pytest.raises(ValueError, match="channels-last"):
        bias_residual_cl(x, x.contiguous(), bias)
    with pytest.raises(ValueError, match="bias_residual_cl"):
        bias_residual_cl(x, x[..., :4], bias)
    tail = channels_last_empty(2, 3, 8, x)
    with pytest.raises(ValueError, match="snake_out without snake"):
        bias_residual_cl(x, x, bias, snake_out=tail)
    with pytest.raises(ValueError, match="alpha/beta"):
        bias_residual_cl(x, x, bias, snake=(alpha[:2], beta), snake_out=tail)
    with pytest.raises(ValueError, match="snake_out must be a channels-last"):
        bias_residual_cl(x, x, bias, snake=(alpha, beta), snake_out=tail[..., :4])
    with pytest.raises(ValueError, match="snake_out must be a channels-last"):
        bias_residual_cl(x, x, bias, snake=(alpha, beta), snake_out=tail.contiguous())
    with pytest.raises(ValueError, match="snake_out must be torch.float32"):
        bias_residual_cl(x, x, bias, snake=(alpha, beta), snake_out=tail.bfloat16())


@pytest.mark.parametrize("block_c", [1, 2, 4])
def test_snakebeta_cl_with_a_given_channel_tile(block_c):
    # block_c splits C over programs (tools/bench_snakebeta.py times a tile that divides C: 96 -> 32).
    x = _channels_last((2, 6, 9), torch.float32, seed=10)
    alpha, beta, bias = _params(6, seed=11)
    got = snakebeta_cl(x, alpha, beta, bias=bias, tile=8, block_c=block_c)
    torch.testing.assert_close(got, snakebeta_reference(x, alpha, beta, bias), rtol=1e-5, atol=1e-5)


def test_snakebeta_cl_fast_sin_only_on_a_gpu_for_16_bit_outputs():
    # sin.approx is libdevice's, which the interpreter lacks; asked for here, the kernel keeps tl.sin (same result).
    x = _channels_last((2, 5, 29), torch.bfloat16, seed=12)
    alpha, beta, bias = _params(5, seed=13)
    fast = snakebeta_cl(x, alpha, beta, bias=bias, fast_sin=True)
    assert torch.equal(fast, snakebeta_cl(x, alpha, beta, bias=bias, fast_sin=False))


def test_bench_snakebeta_shapes_are_the_decoders_snakebetas():
    """tools/bench_snakebeta.py times one step's SnakeBeta launches: as many as the decoder has SnakeBeta modules,
    and per stream as many elements as they see for a chunk of 15 frames."""
    from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig, SnakeBeta
    from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER

    bench = load_tool("bench_snakebeta")
    cfg = CodecDecoderConfig()
    shapes = bench.step_shapes(cfg, frames=15)
    tiny = CodecDecoder(CodecDecoderConfig(**TINY_DECODER))  # the released layout at tiny widths
    snakes = [m for m in tiny.modules() if isinstance(m, SnakeBeta)]
    assert sum(n for _, _, n in shapes) == len(snakes) == 29
    assert shapes[0] == (1536, 60, 1) and shapes[-1] == (96, 15 * 1920, 7)
    assert [bench.dividing_block_c(c) for c, _, _ in shapes] == [128, 128, 128, 64, 32]


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.channels_last import _bias_residual_cl_kernel, _snakebeta_cl_kernel

target = GPUTarget("cuda", 90, 32)
sizes = {name: "i32" for name in ("channels", "length")}
params = {name: "*fp32" for name in ("alpha_ptr", "beta_ptr", "bias_ptr")}
for fast in (False, True):
    signature = {name: "*bf16" for name in ("x_ptr", "out_ptr")} | params | sizes
    signature |= {name: "i32" for name in ("x_stride_b", "x_stride_t", "out_stride_b", "out_stride_t")}
    signature |= {name: "constexpr" for name in ("HAS_BIAS", "FAST_SIN", "BLOCK_T", "BLOCK_C")}
    constexprs = {"HAS_BIAS": True, "FAST_SIN": fast, "BLOCK_T": 32, "BLOCK_C": 128}
    ptx = compile(ASTSource(_snakebeta_cl_kernel, signature, constexprs), target=target).asm["ptx"]
    assert ("sin.approx" in ptx) == fast, ("snakebeta_cl", fast)
    stores = {}
    for snake in (False, True):
        signature = {name: "*bf16" for name in ("x_ptr", "y_ptr", "out_ptr", "snake_ptr")} | params | sizes
        strides = ("x_stride_b", "x_stride_t", "y_stride_b", "y_stride_t", "snake_stride_b", "snake_stride_t")
        signature |= {name: "i32" for name in strides}
        signature |= {name: "constexpr" for name in ("SNAKE", "FAST_SIN", "BLOCK_T", "BLOCK_C")}
        constexprs = {"SNAKE": snake, "FAST_SIN": fast, "BLOCK_T": 32, "BLOCK_C": 128}
        ptx = compile(ASTSource(_bias_residual_cl_kernel, signature, constexprs), target=target).asm["ptx"]
        assert ("sin.approx" in ptx) == (snake and fast), ("bias_residual_cl", snake, fast)
        stores[snake] = ptx.count("st.global")
    assert stores[True] == 2 * stores[False], ("bias_residual_cl stores: the sum, and with SNAKE its SnakeBeta", stores)
print("compiled")
"""


def test_kernels_compile_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
