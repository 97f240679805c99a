"""The codec's streaming windows through kernels/codec_window.py against the PyTorch path: the copy kernels against
indexing, and the decoder with `window_kernel` / `window_pair_kernel` (the transformer's K/V windows) and with
`history_kernel` / `history_swap_kernel` (the convs' input histories, default and channels-last vocoder) against
without, bit for bit (waveforms and the whole streaming state), eagerly and through codec_step with padded scratch
rows. On CPU through the Triton interpreter; tools/bench_codec.py --window-kernel / --history-kernel (and the others'
flags) check the same on the GPU, under graph replay too."""

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
from omni.kernels.codec_window import concat_windows, copy_history, copy_windows, swap_history

from omni.models.qwen3_tts.codec import CodecDecoder
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER
from omni.models.qwen3_tts.codec_graphs import codec_step, fuse_channels_last, fuse_transformer
from tests.codec_streams import UTTERANCES, one_frame_steps, same_run, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_copy_equals_indexing(dtype):
    gen = torch.Generator().manual_seed(3)
    src = torch.randn(5, 3, 9, 6, generator=gen).to(dtype)  # head dim 6: padded to 8 inside the kernel
    length = 4
    # state -> buffer: rows indirected on the source side
    dst = torch.zeros(3, 3, 7, 6, dtype=dtype)
    rows = torch.tensor([4, 0, 2])
    copy_windows(src, dst, length, src_rows=rows)
    assert torch.equal(dst[:, :, :length], src[rows, :, :length]) and not dst[:, :, length:].any()
    # buffer -> state: each row from its own start, into its own row of the destination
    state = torch.zeros(6, 3, length, 6, dtype=dtype)
    start = torch.tensor([0, 5, 3, 1, 2])
    out_rows = torch.tensor([5, 1, 0, 3, 2])
    copy_windows(src, state, length, src_start=start, dst_rows=out_rows)
    for b in range(5):
        want = src[b, :, int(start[b]) : int(start[b]) + length]
        assert torch.equal(state[int(out_rows[b])], want)
    assert not state[4].any()  # a row nobody writes is left alone


def test_bad_arguments_fail_clearly():
    src = torch.zeros(2, 3, 5, 4)
    with pytest.raises(ValueError, match="alike"):
        copy_windows(src, torch.zeros(2, 2, 5, 4), 3)
    with pytest.raises(ValueError, match="dtype"):
        copy_windows(src, torch.zeros(2, 3, 5, 4, dtype=torch.float64), 3)
    with pytest.raises(ValueError, match="length"):
        copy_windows(src, torch.zeros(2, 3, 2, 4), 3)
    with pytest.raises(ValueError, match="one length"):
        copy_windows(src, src.clone(), 3, src_rows=torch.tensor([0, 1]), dst_rows=torch.tensor([1]))
    with pytest.raises(ValueError, match="rows"):
        copy_windows(src, torch.zeros(1, 3, 5, 4), 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_pair_copy_equals_two_copies(dtype):
    """Keys and values in one launch: each of the pair as copy_windows copies it alone."""
    gen = torch.Generator().manual_seed(5)
    keys, values = (torch.randn(4, 2, 9, 6, generator=gen).to(dtype) for _ in range(2))
    start, rows = torch.tensor([0, 5, 3, 1]), torch.tensor([2, 0, 5, 3])
    want_k, want_v, got_k, got_v = (torch.zeros(6, 2, 4, 6, dtype=dtype) for _ in range(4))
    copy_windows(keys, want_k, 4, src_start=start, dst_rows=rows)
    copy_windows(values, want_v, 4, src_start=start, dst_rows=rows)
    copy_windows(keys, got_k, 4, src_start=start, dst_rows=rows, pair=(values, got_v))
    assert torch.equal(got_k, want_k) and torch.equal(got_v, want_v) and not torch.equal(got_k, got_v)
    with pytest.raises(ValueError, match="pair"):
        copy_windows(keys, got_k, 4, pair=(values[:, :, :8], got_v))
    with pytest.raises(ValueError, match="pair"):
        copy_windows(keys, got_k, 4, pair=(values, got_v.transpose(1, 2).contiguous().transpose(1, 2)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_concat_windows_equals_cat(dtype):
    """[past rows ‖ new] for keys and values in one launch; the new values strided as a fused projection's slice."""
    gen = torch.Generator().manual_seed(6)
    past_k, past_v = (torch.randn(5, 2, 7, 6, generator=gen).to(dtype) for _ in range(2))
    rows = torch.tensor([4, 0, 4])
    new_k = torch.randn(3, 4, 2, 6, generator=gen).to(dtype).transpose(1, 2)  # [B, H, T, D] of a [B, T, H, D]
    qkv = torch.randn(3, 4, 5 * 6, generator=gen).to(dtype)
    new_v = qkv[..., 3 * 6 :].view(3, 4, 2, 6).transpose(1, 2)
    keys, values = concat_windows(past_k, past_v, rows, new_k, new_v)
    assert torch.equal(keys, torch.cat([past_k[rows], new_k], dim=2))
    assert torch.equal(values, torch.cat([past_v[rows], new_v], dim=2))
    with pytest.raises(ValueError, match="fit"):
        concat_windows(past_k, past_v, rows[:2], new_k, new_v)
    with pytest.raises(ValueError, match="one"):
        concat_windows(past_k, past_v[:, :, :6], rows, new_k, new_v)
    with pytest.raises(ValueError, match="dtype"):
        concat_windows(past_k, past_v, rows, new_k.double(), new_v)


def _decoder(dtype: torch.dtype, channels_last: bool = False, fused: bool = False, **switches: bool) -> CodecDecoder:
    """The tiny decoder (the channels-last vocoder, the fused transformer where asked) with the kernel switches
    `switches` set."""
    model = tiny_codec_decoder(dtype)
    if channels_last:
        fuse_channels_last(model)
    if fused:
        fuse_transformer(model)  # the new values are then a column slice of one q/k/v GEMM: strided
    for name, on in switches.items():
        setattr(model, name, on)
    return model


@pytest.mark.parametrize(
    "dtype,switch,fused",
    [
        (torch.float32, "window_kernel", False),
        (torch.bfloat16, "window_kernel", False),
        (torch.float32, "window_pair_kernel", False),
        (torch.bfloat16, "window_pair_kernel", False),
        (torch.float32, "window_pair_kernel", True),
    ],
)
def test_decoder_with_the_window_kernels_equals_without(dtype, switch, fused):
    (want, want_state), (got, got_state) = (stream(_decoder(dtype, fused=fused, **{switch: k})) for k in (False, True))
    assert same_run((got, got_state), (want, want_state))
    assert bool(want_state.key[:, 3].any()) and bool(want_state.value[:, 0].any())  # the windows were written


@pytest.mark.parametrize("switch", ["window_kernel", "window_pair_kernel"])
def test_one_frame_steps_with_the_window_kernels_equal_without(switch):
    want, got = (one_frame_steps(_decoder(torch.bfloat16, **{switch: k})) for k in (0, 1))
    assert same_run(got, want)


@pytest.mark.parametrize(
    "switch",
    [
        "window_kernel",
        "window_pair_kernel",
        "history_kernel",
        "history_kernel+channels_last",
        "history_swap_kernel",
        "history_swap_kernel+channels_last",
    ],
)
def test_codec_step_with_scratch_rows_equals_without(switch):
    """codec_step as a graph replays it: padded rows pointing at one scratch slot with 0 frames."""
    results = []
    for kernel in (False, True):
        model = _decoder(
            torch.float32, channels_last=switch.endswith("channels_last"), **{switch.split("+")[0]: kernel}
        )
        state = model.new_state(4)
        for step, frames in enumerate(([3, 1], [2, 3])):
            codes = UTTERANCES[:2, 3 * step : 3 * step + 3].clone()
            rows = torch.tensor([1, 0, 3, 3])  # rows 2 and 3: scratch slot 3, 0 frames
            padded = torch.cat([codes, torch.zeros(2, 3, 16, dtype=codes.dtype)])
            wav = codec_step(model, state, padded, rows, torch.tensor([*frames, 0, 0]))
        results.append((wav, state.tensors()))
    (want, want_state), (got, got_state) = results
    assert torch.equal(got, want)
    assert all(torch.equal(g, w) for g, w in zip(got_state, want_state, strict=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_history_copy_equals_indexing(dtype):
    gen = torch.Generator().manual_seed(4)
    state = torch.randn(5, 20, 3, generator=gen).to(dtype)  # [slots, channels, context]: 20 channels, not a power of 2
    rows = torch.tensor([4, 0, 2])
    for channels_last in (False, True):  # the default path's buffers and the channels-last vocoder's
        shape = (3, 12, 20) if channels_last else (3, 20, 12)
        full = torch.zeros(shape, dtype=dtype)
        full = full.transpose(1, 2) if channels_last else full  # [B, C, L] either way
        copy_history(state, full, 3, src_rows=rows)  # state -> buffer head, rows indirected on the source side
        assert torch.equal(full[..., :3], state[rows]) and not full[..., 3:].any()
        # buffer -> state: each row's `context` samples from frames[b] * per_frame on, into its own state row
        full.copy_(torch.randn(full.shape, generator=gen).to(dtype))
        out = state.clone()
        frames, out_rows = torch.tensor([2, 0, 4]), torch.tensor([1, 3, 0])
        copy_history(full, out, 3, src_start=frames, dst_rows=out_rows, start_scale=2)
        for b in range(3):
            start = 2 * int(frames[b])
            assert torch.equal(out[int(out_rows[b])], full[b, :, start : start + 3])
        assert torch.equal(out[[2, 4]], state[[2, 4]])  # rows nobody writes are left alone


def test_history_copy_bad_arguments_fail_clearly():
    src = torch.zeros(2, 3, 5)
    with pytest.raises(ValueError, match="alike"):
        copy_history(src, torch.zeros(2, 4, 5), 3)
    with pytest.raises(ValueError, match="float64"):
        copy_history(src, torch.zeros(2, 3, 5, dtype=torch.float64), 3)
    with pytest.raises(ValueError, match="length"):
        copy_history(src, torch.zeros(2, 3, 2), 3)
    with pytest.raises(ValueError, match="one length"):
        copy_history(src, src.clone(), 3, src_rows=torch.tensor([0, 1]), dst_rows=torch.tensor([1]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_history_swap_equals_the_two_copies(dtype):
    """swap_history after the buffer's new part is written: its head from the state's rows and the new history back,
    as copy_history there and back; a new history that starts inside the old one (fewer new samples than context),
    and padded rows on one scratch slot with 0 frames, which store back what they read."""
    gen = torch.Generator().manual_seed(5)
    state = torch.randn(6, 20, 3, generator=gen).to(dtype)  # [slots, channels, context]
    rows, frames = torch.tensor([4, 0, 2, 5, 5]), torch.tensor([2, 0, 1, 0, 0])  # slot 5: scratch, twice
    for channels_last, per_frame in ((False, 1), (True, 2)):
        shape = (5, 7, 20) if channels_last else (5, 20, 7)  # context 3 + 4 new samples
        full = torch.randn(shape, generator=gen).to(dtype)
        full = full.transpose(1, 2) if channels_last else full  # [B, C, L] either way
        want_full = full.clone()
        want_full[..., :3] = state[rows]
        want_state = state.clone()
        for b in range(3):  # the distinct rows; the scratch rows keep their slot as it was
            start = per_frame * int(frames[b])
            want_state[int(rows[b])] = want_full[b, :, start : start + 3]
        got_state = state.clone()
        swap_history(got_state, full, rows, frames, per_frame)
        assert torch.equal(full, want_full) and torch.equal(got_state, want_state)
        moved = 3 - per_frame  # row 2 has 1 frame: the old history's tail moved up by its new samples
        assert torch.equal(got_state[2, :, :moved], state[2, :, per_frame:])


def test_history_swap_bad_arguments_fail_clearly():
    state, rows, frames = torch.zeros(2, 3, 4), torch.tensor([0, 1]), torch.tensor([1, 1])
    with pytest.raises(ValueError, match="must be"):
        swap_history(state, torch.zeros(2, 5, 6), rows, frames, 1)
    with pytest.raises(ValueError, match="float64"):
        swap_history(state, torch.zeros(2, 3, 6, dtype=torch.float64), rows, frames, 1)
    with pytest.raises(ValueError, match="does not fit"):
        swap_history(state, torch.zeros(2, 3, 3), rows, frames, 1)
    with pytest.raises(ValueError, match="one length"):
        swap_history(state, torch.zeros(2, 3, 6), rows, frames[:1], 1)


@pytest.mark.parametrize(
    "dtype,channels_last,switch",
    [
        (torch.float32, False, "history_kernel"),
        (torch.bfloat16, False, "history_kernel"),
        (torch.float32, True, "history_kernel"),
        (torch.float32, False, "history_swap_kernel"),
        (torch.bfloat16, False, "history_swap_kernel"),
        (torch.float32, True, "history_swap_kernel"),
        (torch.bfloat16, True, "history_swap_kernel+residual_snake_kernel"),  # a buffer kept after the next op
    ],
)
def test_decoder_with_the_history_kernels_equals_without(dtype, channels_last, switch):
    """Uneven primed streams and one-frame steps: the same waveforms and state, bit for bit, with the convs'
    histories copied by the kernels; through the default vocoder and the channels-last one."""
    runs = []
    name, *others = switch.split("+")
    for kernel in (False, True):
        model = _decoder(dtype, channels_last=channels_last, **{name: kernel}, **dict.fromkeys(others, True))
        runs.append([stream(model), one_frame_steps(model)])
    for want, got in zip(*runs, strict=True):
        assert same_run(got, want)
    assert all(bool(h[3].any()) for h in runs[0][0][1].history)  # every conv's history was written


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.codec_window import _concat_windows_kernel, _copy_windows_kernel

pointers = {name: "*bf16" for name in ("src_ptr", "dst_ptr", "src2_ptr", "dst2_ptr")} | {name: "*i64" for name in
    ("src_rows_ptr", "src_start_ptr", "dst_rows_ptr")}
strides = {name: "i32" for name in ("length", "src_stride_n", "src_stride_h", "src_stride_l", "dst_stride_n",
    "dst_stride_h", "dst_stride_l")}
flags = {"HAS_SRC_ROWS", "HAS_SRC_START", "HAS_DST_ROWS", "DIM", "DIM_PAD", "BLOCK_L"}
for on in (True, False):  # the window state -> buffer copy, and buffer -> state (and both branches of each flag)
    constexprs = {"HAS_SRC_ROWS": on, "HAS_SRC_START": not on, "HAS_DST_ROWS": not on, "DIM": 64, "DIM_PAD": 64,
                  "BLOCK_L": 64}
    signature = pointers | strides | {name: "constexpr" for name in flags}
    ptx = compile(ASTSource(_copy_windows_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx
signature = {name: "*bf16" for name in ("past_k_ptr", "past_v_ptr", "new_k_ptr", "new_v_ptr", "full_k_ptr",
    "full_v_ptr")} | {"rows_ptr": "*i64"} | {name: "i32" for name in ("window", "length")}
signature |= {f"{t}_stride_{d}": "i32" for t in ("past", "new_k", "new_v", "full") for d in
    (("n", "h", "l") if t == "past" else ("b", "h", "l"))}
signature |= {name: "constexpr" for name in ("DIM", "DIM_PAD", "BLOCK_L")}
constexprs = {"DIM": 64, "DIM_PAD": 64, "BLOCK_L": 64}
ptx = compile(ASTSource(_concat_windows_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32)).asm["ptx"]
assert "ld.global" in ptx and "st.global" in ptx
from omni.kernels.codec_window import _copy_history_kernel

pointers = {name: "*bf16" for name in ("src_ptr", "dst_ptr")} | {name: "*i64" for name in
    ("src_rows_ptr", "src_start_ptr", "dst_rows_ptr")}
ints = {name: "i32" for name in ("channels", "length", "start_scale", "src_stride_n", "src_stride_c",
    "src_stride_t", "dst_stride_n", "dst_stride_c", "dst_stride_t")}
flags = {"HAS_SRC_ROWS", "HAS_SRC_START", "HAS_DST_ROWS", "BLOCK_C", "BLOCK_T"}
for on in (True, False):  # the history state -> buffer copy, and buffer -> state
    constexprs = {"HAS_SRC_ROWS": on, "HAS_SRC_START": not on, "HAS_DST_ROWS": not on, "BLOCK_C": 64, "BLOCK_T": 64}
    signature = pointers | ints | {name: "constexpr" for name in flags}
    ptx = compile(ASTSource(_copy_history_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx
from omni.kernels.codec_window import _swap_history_kernel

signature = {"history_ptr": "*bf16", "full_ptr": "*bf16", "rows_ptr": "*i64", "frames_ptr": "*i64"}
signature |= {name: "i32" for name in ("channels", "context", "per_frame", "h_stride_n", "h_stride_c", "h_stride_t",
    "f_stride_n", "f_stride_c", "f_stride_t")} | {"BLOCK_C": "constexpr", "BLOCK_T": "constexpr"}
constexprs = {"BLOCK_C": 64, "BLOCK_T": 64}
ptx = compile(ASTSource(_swap_history_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32)).asm["ptx"]
assert "ld.global" in ptx and "st.global" in ptx
print("compiled")
"""


def test_kernel_compiles_for_sm90(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_census_tool_counts_what_the_pair_qk_rope_and_swap_kernels_remove(tmp_path):
    """tools/census_codec_step.py (the launches of one codec step, counted on the CPU) with the service's defaults
    (window_pair_kernel on since run 125, history_swap_kernel since run 128) and with each off: per transformer layer,
    one copy of both windows and one concatenation against 4 window copies and the 2 PyTorch copies of the new K/V;
    with qk_rope_kernel on, one RoPE launch a layer, not two; one history launch a stateful conv, not two."""
    runs = {}
    variants = (
        ("base", []),
        ("apart", ["--off", "window_pair_kernel"]),
        ("qk", ["--on", "qk_rope_kernel"]),
        ("copies", ["--off", "history_swap_kernel"]),
    )
    for name, extra in variants:
        out = tmp_path / f"{name}.json"
        cmd = [sys.executable, str(ROOT / "tools/census_codec_step.py"), "--tiny", "--out", str(out), *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = json.loads(out.read_text())
    layers = TINY_DECODER["num_hidden_layers"]
    base, apart = runs["base"], runs["apart"]
    assert base["kernel_switches"]["window_kernel"] and base["kernel_switches"]["window_pair_kernel"]
    assert not apart["kernel_switches"]["window_pair_kernel"]
    assert apart["launches"]["_copy_windows_kernel"] == 4 * layers and "_concat_windows_kernel" not in apart["launches"]
    assert base["launches"]["_copy_windows_kernel"] == layers and base["launches"]["_concat_windows_kernel"] == layers
    assert apart["ops"]["copy_"] - base["ops"].get("copy_", 0) == 2 * layers
    assert apart["total"] - base["total"] == 4 * layers
    qk = runs["qk"]
    assert base["kernel_switches"]["transformer_kernels"] and not base["kernel_switches"]["qk_rope_kernel"]
    assert base["launches"]["_rms_norm_rope_kernel"] == 2 * layers and qk["launches"]["_rms_norm_rope_kernel"] == layers
    assert base["total"] - qk["total"] == layers
    copies, convs = runs["copies"], len(tiny_codec_decoder(torch.float32).stateful)
    assert base["kernel_switches"]["history_kernel"] and base["kernel_switches"]["history_swap_kernel"]
    assert copies["kernel_switches"]["history_kernel"] and not copies["kernel_switches"]["history_swap_kernel"]
    assert copies["launches"]["_copy_history_kernel"] == 2 * convs and "_copy_history_kernel" not in base["launches"]
    assert base["launches"]["_swap_history_kernel"] == convs and copies["total"] - base["total"] == convs
