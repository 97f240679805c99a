"""The codec transformer's window attention through kernels/codec_attention.py (the codec's `attention_kernel`)
against SDPA over the mask: the kernel alone over awkward shapes, and the decoder streaming with it against without.
On CPU through the Triton interpreter; tools/bench_codec.py --attention-kernel checks it on the GPU."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.codec_attention import window_attention

from omni.models.qwen3_tts.codec import masked_attention, window_mask
from tests.codec_streams import one_frame_steps, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90


def _sdpa(q, keys, values, qpos, kpos, window):
    """The eager path the kernel replaces: SDPA under the codec's window mask."""
    return masked_attention(q, keys, values, window_mask(qpos, kpos, window))


def _case(t: int, window: int, heads: int, kv_heads: int, dtype: torch.dtype, seed: int):
    """Three rows of a step as the codec builds them: [past window ‖ t new] keys; row 0 a fresh stream (past
    positions -1), row 1 well into its stream, row 2 one whose window is partly filled."""
    gen = torch.Generator().manual_seed(seed)
    b, dim, length = 3, 16, window + t
    q = torch.randn(b, heads, t, dim, generator=gen).to(dtype)
    keys = torch.randn(b, kv_heads, length, dim, generator=gen).to(dtype)
    values = torch.randn(b, kv_heads, length, dim, generator=gen).to(dtype)
    first = torch.tensor([0, 500, 5])  # each row's first new position
    qpos = first[:, None] + torch.arange(t)[None, :]
    past = first[:, None] - window + torch.arange(window)[None, :]
    kpos = torch.cat([past.clamp(min=-1), qpos], dim=1)
    return q, keys, values, qpos, kpos


@pytest.mark.parametrize(
    ("t", "window", "heads", "kv_heads"),
    [(1, 7, 2, 2), (2, 71, 4, 4), (20, 9, 4, 2), (3, 80, 2, 1)],  # 20 queries: two blocks; 83 keys: two blocks
)
def test_kernel_equals_sdpa_over_the_mask(t, window, heads, kv_heads):
    q, keys, values, qpos, kpos = _case(t, window, heads, kv_heads, torch.float32, seed=t)
    want = _sdpa(q, keys, values, qpos, kpos, window)
    got = window_attention(q, keys, values, qpos, kpos, window)
    assert got.shape == (3, t, heads, 16) and got.is_contiguous()
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_kernel_in_bf16_is_as_close_to_fp32_as_sdpa_in_bf16():
    q, keys, values, qpos, kpos = _case(5, 71, 4, 4, torch.float32, seed=9)
    exact = _sdpa(q, keys, values, qpos, kpos, 71)
    half = [x.to(torch.bfloat16) for x in (q, keys, values)]
    sdpa_error = (_sdpa(*half, qpos, kpos, 71).float() - exact).abs().max()
    kernel_error = (window_attention(*half, qpos, kpos, 71).float() - exact).abs().max()
    assert kernel_error <= 1.5 * sdpa_error + 1e-3


def test_a_fresh_stream_sees_only_its_own_frames():
    """Row 0's past entries are position -1: its first query attends to its own key alone, so it returns that
    key's value exactly."""
    q, keys, values, qpos, kpos = _case(2, 7, 2, 2, torch.float32, seed=4)
    got = window_attention(q, keys, values, qpos, kpos, 7)
    torch.testing.assert_close(got[0, 0], values[0, :, 7], rtol=0, atol=1e-6)


def test_bad_arguments_fail_clearly():
    q, keys, values, qpos, kpos = _case(2, 7, 4, 4, torch.float32, seed=1)
    with pytest.raises(ValueError, match="keys"):
        window_attention(q, keys[:, :3], values[:, :3], qpos, kpos, 7)
    with pytest.raises(ValueError, match="kpos"):
        window_attention(q, keys, values, qpos, kpos[:, 1:], 7)
    with pytest.raises(ValueError, match="contiguous"):
        column_major = keys.transpose(2, 3).contiguous().transpose(2, 3)  # the same shape, last dim strided
        window_attention(q, column_major, column_major, qpos, kpos, 7)


def _decoder(kernel: bool, dtype: torch.dtype = torch.float32):
    model = tiny_codec_decoder(dtype)
    model.attention_kernel = kernel
    return model


def _stream(dtype: torch.dtype, kernel: bool):
    return stream(_decoder(kernel, dtype))


def test_decoder_with_the_attention_kernel_equals_without():
    """fp32: within 1e-5 (relative 1e-5 for the state's larger entries), waveforms and state. bf16: the kernel's
    decode about as close to the fp32 one as SDPA's bf16 decode (as bench_codec's check: 1.5x)."""
    (want, want_state), (got, got_state) = _stream(torch.float32, False), _stream(torch.float32, True)
    assert len(got) == len(want)
    for g, w in zip(got + got_state.tensors(), want + want_state.tensors(), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)

    def distance(a: list[torch.Tensor]) -> float:
        return max(float((x.float() - y).abs().max()) for x, y in zip(a, want, strict=True))

    sdpa_bf16, kernel_bf16 = (_stream(torch.bfloat16, kernel)[0] for kernel in (False, True))
    assert distance(kernel_bf16) <= 1.5 * max(distance(sdpa_bf16), 1e-2)


def test_one_frame_steps_with_the_attention_kernel_equal_without():
    (want, want_state), (got, got_state) = (one_frame_steps(_decoder(k)) for k in (False, True))
    for g, w in zip(got + got_state.tensors(), want + want_state.tensors(), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.codec_attention import _window_attention_kernel

names = ("queries", "length", "window", "q_stride_b", "q_stride_h", "q_stride_t", "kv_stride_b", "kv_stride_h",
    "kv_stride_l", "qpos_stride_b", "kpos_stride_b", "out_stride_b", "out_stride_t", "out_stride_h")
signature = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "qpos_ptr": "*i64", "kpos_ptr": "*i64",
    "out_ptr": "*bf16", "scale": "fp32"} | {name: "i32" for name in names}
signature |= {name: "constexpr" for name in ("GROUP", "DIM", "DIM_PAD", "BLOCK_T", "BLOCK_L", "DOT_FP32")}
constexprs = {"GROUP": 1, "DIM": 64, "DIM_PAD": 64, "BLOCK_T": 16, "BLOCK_L": 64, "DOT_FP32": False}
ptx = compile(ASTSource(_window_attention_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32)).asm["ptx"]
assert "mma" in ptx, "tl.dot on the tensor cores"
print("compiled")
"""


def test_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
