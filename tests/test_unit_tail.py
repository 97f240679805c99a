"""kernels/unit_tail.py (a residual unit's SnakeBeta, 1x1 conv2 and add as one GEMM) against the separate kernels, and
the channels-last vocoder with the decoder's `unit_tail_kernel` against without; CPU, Triton interpreter."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
import torch.nn.functional as F
from omni.kernels.channels_last import bias_residual_cl, channels_last_empty, is_channels_last, snakebeta_cl
from omni.kernels.tiles import Tiles
from omni.kernels.unit_tail import DEFAULT_TILES, conv2_matrix, unit_tail

from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
from tests.codec_streams import one_frame_steps, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90, run_kernel_tool_on_cpu

# Channels around the kernel's 16-wide minimum and past one 128-wide N tile and one 32-wide K step; odd lengths.
SHAPES = [(1, 2, 5), (2, 40, 9), (3, 16, 33), (1, 130, 7)]


def _inputs(shape, dtype, seed):
    """conv1's output h (dense channels-last), the residual x (a slice along T), conv2's weight, six [C] params."""
    b, c, t = shape
    gen = torch.Generator().manual_seed(seed)
    h = (torch.randn(b, t, c, generator=gen) * 2).to(dtype).transpose(1, 2)
    x = (torch.randn(b, t + 3, c, generator=gen) * 2).to(dtype).transpose(1, 2)[..., 1 : t + 1]
    weight = (torch.randn(c, c, 1, generator=gen) / c**0.5).to(dtype)
    params = [torch.randn(c, generator=gen) * 0.5 for _ in range(6)]  # h_bias, act alpha/beta, bias, next alpha/beta
    return h, x, weight, params


def _separate(h, x, weight, params, snake: bool):
    """The unit's tail as the vocoder runs it without the kernel: SnakeBeta, conv2 (PyTorch), the add (+ SnakeBeta)."""
    h_bias, act_a, act_b, bias, alpha, beta = params
    y = F.conv1d(snakebeta_cl(h, act_a, act_b, bias=h_bias), weight).transpose(1, 2).contiguous().transpose(1, 2)
    if not snake:
        return bias_residual_cl(x, y, bias), None
    buffer = channels_last_empty(x.shape[0], x.shape[1], x.shape[2] + 4, x).fill_(7.0)
    return bias_residual_cl(x, y, bias, snake=(alpha, beta), snake_out=buffer[..., 4:]), buffer


def _fused(h, x, weight, params, snake: bool):
    h_bias, act_a, act_b, bias, alpha, beta = params
    w = conv2_matrix(weight)
    if not snake:
        return unit_tail(h, h_bias, (act_a, act_b), w, x, bias), None
    buffer = channels_last_empty(x.shape[0], x.shape[1], x.shape[2] + 4, x).fill_(7.0)
    return unit_tail(h, h_bias, (act_a, act_b), w, x, bias, snake=(alpha, beta), snake_out=buffer[..., 4:]), buffer


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


@pytest.mark.parametrize("snake", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_fp32_equals_the_separate_kernels(shape, snake):
    h, x, weight, params = _inputs(shape, torch.float32, seed=1)
    want, want_buffer = _separate(h, x, weight, params, snake)
    got, got_buffer = _fused(h, x, weight, params, snake)
    assert is_channels_last(got) and got.transpose(1, 2).is_contiguous()
    scale = max(1.0, float(want.abs().max()))
    assert _max_abs(got, want) <= 1e-5 * scale  # the GEMM's sums in another order
    if snake:
        assert torch.all(got_buffer[..., :4] == 7.0)  # the history part untouched
        assert _max_abs(got_buffer, want_buffer) <= 1e-5 * scale


@pytest.mark.parametrize("shape", SHAPES)
def test_bf16_is_as_close_to_fp32_as_the_separate_kernels(shape):
    # The same bf16 inputs through the fp32 chain are the reference; the kernel rounds where the separate kernels
    # store (the SnakeBeta, conv2's output, the sum), so its error is theirs up to the order of the GEMM's sums.
    h, x, weight, params = _inputs(shape, torch.bfloat16, seed=2)
    reference, reference_buffer = _separate(h.float(), x.float(), weight.float(), params, snake=True)
    separate, separate_buffer = _separate(h, x, weight, params, snake=True)
    got, got_buffer = _fused(h, x, weight, params, snake=True)
    assert got.dtype == torch.bfloat16
    ulp = 2**-7 * max(1.0, float(reference.abs().max()))
    assert _max_abs(got, reference) <= 2 * _max_abs(separate, reference) + ulp
    assert _max_abs(got_buffer, reference_buffer) <= 2 * _max_abs(separate_buffer, reference_buffer) + ulp


def test_bad_input_is_a_clear_error():
    h, x, weight, params = _inputs((2, 8, 5), torch.float32, seed=3)
    h_bias, act_a, act_b, bias, alpha, beta = params
    w = conv2_matrix(weight)
    with pytest.raises(ValueError, match="square 1x1"):
        conv2_matrix(torch.zeros(8, 8, 3))
    with pytest.raises(ValueError, match="one \\[B, C, T\\] shape"):
        unit_tail(h, h_bias, (act_a, act_b), w, x[..., :4], bias)
    with pytest.raises(ValueError, match="dense channels-last"):
        unit_tail(h.contiguous(), h_bias, (act_a, act_b), w, x, bias)
    with pytest.raises(ValueError, match="x must be channels-last"):
        unit_tail(h, h_bias, (act_a, act_b), w, x.contiguous(), bias)
    with pytest.raises(ValueError, match="per-channel"):
        unit_tail(h, h_bias[:3], (act_a, act_b), w, x, bias)
    with pytest.raises(ValueError, match="per-channel"):
        unit_tail(h, h_bias, (act_a, act_b), w.t(), x, bias)  # not contiguous
    with pytest.raises(ValueError, match="one dtype"):
        unit_tail(h, h_bias, (act_a, act_b), w.bfloat16(), x, bias)
    with pytest.raises(ValueError, match="snake_out without snake"):
        unit_tail(h, h_bias, (act_a, act_b), w, x, bias, snake_out=channels_last_empty(2, 8, 5, x))
    with pytest.raises(ValueError, match="snake_out must be a channels-last"):
        unit_tail(h, h_bias, (act_a, act_b), w, x, bias, snake=(alpha, beta), snake_out=torch.empty(2, 8, 5))
    tail = channels_last_empty(2, 8, 5, x).bfloat16()
    with pytest.raises(ValueError, match="snake_out must be torch.float32"):
        unit_tail(h, h_bias, (act_a, act_b), w, x, bias, snake=(alpha, beta), snake_out=tail)


def test_the_gemm_without_the_prologue_equals_the_fused_kernel_on_snakebeta_output():
    """h_bias and act None: h already holds the second SnakeBeta (how tools/bench_unit_tail.py times the prologue)."""
    h, x, weight, params = _inputs((2, 40, 9), torch.float32, seed=4)
    h_bias, act_a, act_b, bias, alpha, beta = params
    want, want_buffer = _fused(h, x, weight, params, snake=True)
    snaked = snakebeta_cl(h, act_a, act_b, bias=h_bias)
    buffer = channels_last_empty(2, 40, 13, x).fill_(7.0)
    got = unit_tail(snaked, None, None, conv2_matrix(weight), x, bias, snake=(alpha, beta), snake_out=buffer[..., 4:])
    assert _max_abs(got, want) <= 1e-5 * max(1.0, float(want.abs().max()))
    assert _max_abs(buffer, want_buffer) <= 1e-5 * max(1.0, float(want_buffer.abs().max()))
    with pytest.raises(ValueError, match="together"):
        unit_tail(snaked, h_bias, None, conv2_matrix(weight), x, bias)


@pytest.mark.parametrize("tiles", ["64x16x16w4s2", "128x64x64w8s3"])
def test_other_tiles_compute_the_same_tail(tiles):
    """The tile sizes only regroup the work (under the interpreter BLOCK_M is its own; BLOCK_N and BLOCK_K count)."""
    h, x, weight, params = _inputs((1, 130, 7), torch.float32, seed=5)
    h_bias, act_a, act_b, bias, _, _ = params
    want = unit_tail(h, h_bias, (act_a, act_b), conv2_matrix(weight), x, bias)
    got = unit_tail(h, h_bias, (act_a, act_b), conv2_matrix(weight), x, bias, tiles=Tiles.parse(tiles))
    assert _max_abs(got, want) <= 1e-5 * max(1.0, float(want.abs().max()))


def test_tiles_parse_and_print():
    assert Tiles.parse("64x256x64w8s4") == Tiles(64, 256, 64, 8, 4)
    assert Tiles.parse(str(DEFAULT_TILES)) == DEFAULT_TILES
    with pytest.raises(ValueError, match="BMxBNxBK"):
        Tiles.parse("128x128x32")


def _decode(dtype, unit_tail_kernel: bool, residual_snake_kernel: bool):
    model = tiny_codec_decoder(dtype)
    fuse_channels_last(model)
    model.unit_tail_kernel, model.residual_snake_kernel = unit_tail_kernel, residual_snake_kernel
    return [stream(model), one_frame_steps(model)]


@pytest.mark.parametrize("residual_snake_kernel", [False, True])
def test_decoder_with_the_kernel_equals_without_in_fp32(residual_snake_kernel):
    """Uneven primed streams and one-frame steps, waveforms and state, within the GEMM's reordering (as the codec's
    other reordering kernels are checked: 1e-5, scaled by a state tensor's magnitude)."""
    want = _decode(torch.float32, False, residual_snake_kernel)
    got = _decode(torch.float32, True, residual_snake_kernel)
    for (want_wavs, want_state), (got_wavs, got_state) in zip(want, got, strict=True):
        assert max(_max_abs(g, w) for g, w in zip(got_wavs, want_wavs, strict=True)) <= 1e-5
        for g, w in zip(got_state.tensors(), want_state.tensors(), strict=True):
            assert _max_abs(g, w) <= 1e-5 * max(1.0, float(w.abs().max()))


def test_decoder_with_the_kernel_in_bf16_is_as_close_to_fp32_as_without():
    reference = _decode(torch.float32, False, True)
    plain = _decode(torch.bfloat16, False, True)
    fused = _decode(torch.bfloat16, True, True)

    def error(run) -> float:
        return max(
            _max_abs(g, w)
            for (wavs, _), (ref, _) in zip(run, reference, strict=True)
            for g, w in zip(wavs, ref, strict=True)
        )

    assert error(fused) <= 1.5 * max(error(plain), 1e-2)  # as bench_codec's check_close on the GPU


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.unit_tail import _unit_tail_kernel

pointers = ("h_ptr", "w_ptr", "x_ptr", "out_ptr", "snake_ptr")
params = ("h_bias_ptr", "act_alpha_ptr", "act_beta_ptr", "bias_ptr", "alpha_ptr", "beta_ptr")
ints = ("rows", "length", "channels", "x_stride_b", "x_stride_t", "snake_stride_b", "snake_stride_t")
flags = ("SNAKE", "FAST_SIN", "IEEE", "PROLOGUE", "BLOCK_M", "BLOCK_N", "BLOCK_K")
for snake, fast in ((False, False), (True, True)):  # two compiles of ~8 s: the fused SnakeBeta and the fast sine
    signature = {name: "*bf16" for name in pointers} | {name: "*fp32" for name in params}
    signature |= {name: "i32" for name in ints} | {name: "constexpr" for name in flags}
    constexprs = {"SNAKE": snake, "FAST_SIN": fast, "IEEE": False, "PROLOGUE": True}
    constexprs |= {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}
    compiled = compile(ASTSource(_unit_tail_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32))
    ptx = compiled.asm["ptx"]
    assert "mma" in ptx, "the GEMM on tensor cores"
    assert ("sin.approx" in ptx) == fast, (snake, fast)
    assert ptx.count("st.global") > 0
print("compiled")
"""


def test_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_bench_unit_tail_times_every_side_and_reports_their_difference(tmp_path):
    """tools/bench_unit_tail.py on CPU (interpreter, tiny widths): every block and side has a row, and the fused and
    gemm-only sides compute the separate kernels' tail (fp32 within the GEMM's reordering)."""
    _, rows = run_kernel_tool_on_cpu(
        "bench_unit_tail.py", tmp_path, "--rows", "2", "--frames", "1", "--tiles", "128x128x32w4s3", "64x64x64w4s2"
    )
    sides = ["separate"] + [f"{kind} {t}" for t in ("128x128x32w4s3", "64x64x64w4s2") for kind in ("fused", "gemm")]
    assert [r["side"] for r in rows] == sides * 4  # the released layout's four blocks, at tiny widths
    assert all(r["out_max_abs"] <= 1e-4 and r["snake_max_abs"] <= 1e-4 for r in rows)
    assert all(r["ms"] > 0 for r in rows)


def test_bench_unit_tail_times_the_conv2_gemm(tmp_path):
    """--conv2 --no-fused: a conv2 row per tile and block beside separate, within fp32 reordering of its tail; a tile
    whose BLOCK_K does not divide a block's channels is an error row, not a stop."""
    _, rows = run_kernel_tool_on_cpu(
        "bench_unit_tail.py", tmp_path, "--conv2", "--no-fused", "--rows", "2", "--frames", "1",
        "--tiles", "64x16x4w4s2", "64x16x64w4s2",
    )  # fmt: skip
    assert [r["side"] for r in rows] == ["separate", "conv2 64x16x4w4s2", "conv2 64x16x64w4s2"] * 4
    timed = [r for r in rows if "error" not in r]
    assert {r["side"] for r in timed} >= {"separate", "conv2 64x16x4w4s2"}
    assert all(r["out_max_abs"] <= 1e-4 and r["snake_max_abs"] <= 1e-4 and r["ms"] > 0 for r in timed)
    assert any("BLOCK_K 64" in r["error"] for r in rows if "error" in r)
