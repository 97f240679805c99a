"""The channels-last vocoder (codec_graphs.ChannelsLastVocoder) equals the default decoder: fp32 on CPU, with its
Triton kernels under the interpreter. On CUDA, tools/bench_codec.py checks it in bf16 and under graph replay."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU tensors

import pytest
import torch
import torch.nn.functional as F

from omni.models.qwen3_tts.codec import CodecDecoder
from omni.models.qwen3_tts.codec_graphs import CodecGraphs, codec_step, fuse_channels_last
from tests.codec_streams import one_frame_steps, same_run, stream, tiny_codec_decoder

# tests/codec_streams.py's decoder: a narrow vocoder (the interpreter runs each Triton program as numpy calls), a
# short attention window so a few frames already slide it. fp32 everywhere; 1e-5 as in test_codec_graphs.py (the
# convs' summation order differs between layouts and batch shapes).
ATOL = 1e-5
CONVS = 1 + 4 * (1 + 3 * 2) + 1  # in-conv, per block a transposed conv and 3 residual units of 2 convs, out-conv


def _decoder(channels_last: bool) -> CodecDecoder:
    model = tiny_codec_decoder(torch.float32)
    if channels_last:
        assert fuse_channels_last(model) == CONVS
    return model


@pytest.fixture(scope="module")
def default():
    return _decoder(channels_last=False)


@pytest.fixture(scope="module")
def fused():
    return _decoder(channels_last=True)


def _stream(model: CodecDecoder, utterances: torch.Tensor, plan: list[list[int]], slots: list[int]):
    """Decode `utterances` [S, T, 16] chunk by chunk: plan[step][i] frames of stream i (0 = not in that step)."""
    state = model.new_state(max(slots) + 1)
    done, out = [0] * len(slots), [[] for _ in slots]
    for sizes in plan:
        active = [i for i, n in enumerate(sizes) if n > 0]
        chunks = [utterances[i, done[i] : done[i] + sizes[i]] for i in active]
        for i, wav in zip(active, model.decode_streams(state, [slots[i] for i in active], chunks), strict=True):
            out[i].append(wav)
            done[i] += sizes[i]
    return [torch.cat(pieces) for pieces in out], state


UTTERANCES = torch.randint(0, 2048, (3, 4, 16), generator=torch.Generator().manual_seed(1))  # 4 frames > window 3


def decode_recording_conv_layouts(model: CodecDecoder) -> tuple[torch.Tensor, list[list[bool]]]:
    """Whole-utterance decode of UTTERANCES, with whether each conv's input, weight and output were channels-last
    (cuDNN runs its NHWC kernels without conversions only if all three are)."""
    layouts = []

    def spy(real):
        def conv(x, weight, *args, **kwargs):
            y = real(x, weight, *args, **kwargs)
            layouts.append([t.is_contiguous(memory_format=torch.channels_last) for t in (x, weight, y)])
            return y

        return conv

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(F, "conv2d", spy(F.conv2d))
        patch.setattr(F, "conv_transpose2d", spy(F.conv_transpose2d))
        wav = model.decode(UTTERANCES)
    return wav, layouts


@pytest.fixture(scope="module")
def whole(fused):
    """Whole-utterance channels-last decode of UTTERANCES and its convs' layouts."""
    return decode_recording_conv_layouts(fused)


def test_every_conv_keeps_channels_last_memory(whole):
    _, layouts = whole
    assert len(layouts) == CONVS
    assert all(all(flags) for flags in layouts), layouts


def test_whole_decode_equals_default(default, whole):
    torch.testing.assert_close(whole[0], default.decode(UTTERANCES), rtol=0, atol=ATOL)


@pytest.mark.parametrize(
    "plan",
    [
        [[1, 1, 1], [3, 3, 3]],  # chunk 1, then the rest
        [[3, 1, 2], [1, 3, 2]],  # unequal chunks: right-padded rows in every step
    ],
)
def test_chunked_equals_whole_and_default_state(default, fused, whole, plan):
    slots = [4, 0, 2]  # not in slot order, gaps between them
    got, got_state = _stream(fused, UTTERANCES, plan, slots)
    want, want_state = _stream(default, UTTERANCES, plan, slots)
    for i in range(3):
        torch.testing.assert_close(got[i], whole[0][i], rtol=0, atol=ATOL)  # chunked = whole
        torch.testing.assert_close(got[i], want[i], rtol=0, atol=ATOL)  # = the default path, same plan
    # The carried state keeps the default layout and values, so a state can move between the two paths.
    for a, b in zip(want_state.history, got_state.history, strict=True):
        assert a.shape == b.shape and b.is_contiguous()
        # Vocoder activations are larger than the waveform and the two paths sum in other orders (conv2d vs conv1d):
        # fp32 rounding scales with the tensor's magnitude, not with each element (a near-zero element can differ
        # by 1e-3 relative), so the absolute tolerance is scaled by the tensor's largest value.
        torch.testing.assert_close(b, a, rtol=1e-4, atol=ATOL * max(1.0, float(a.abs().max())))


def test_codec_step_with_padding_rows_equals_default(default, fused):
    codec_step_equals_default(default, fused)


def codec_step_equals_default(default: CodecDecoder, fused: CodecDecoder) -> None:
    """The graph path's math: codec_step (channels-last) with two scratch rows (slot 3, 0 frames) beside two streams
    of 2 and 1 frames, then 1 and 2, against the default decode_streams."""
    eager, stepped = default.new_state(4), fused.new_state(4)
    done = [0, 0]
    for sizes in ((2, 1), (1, 2)):
        chunks = [UTTERANCES[i, done[i] : done[i] + n] for i, n in enumerate(sizes)]
        want = default.decode_streams(eager, [1, 0], chunks)
        padded = torch.zeros(4, max(sizes), 16, dtype=torch.long)
        for i, c in enumerate(chunks):
            padded[i, : c.shape[0]] = c
        with torch.no_grad():
            wav = codec_step(fused, stepped, padded, torch.tensor([1, 0, 3, 3]), torch.tensor([*sizes, 0, 0]))
        for i, w in enumerate(want):
            torch.testing.assert_close(wav[i, : w.shape[0]], w, rtol=0, atol=ATOL)
        done = [d + n for d, n in zip(done, sizes, strict=True)]
    for a, b in zip(eager.history, stepped.history, strict=True):
        torch.testing.assert_close(b[:2], a[:2], rtol=1e-4, atol=ATOL)
        assert torch.all(b[3] == 0)  # 0-frame rows leave the scratch slot as it was


def test_prime_equals_default(default, fused):
    ref, chunk = UTTERANCES[0], UTTERANCES[1, :2]
    wavs = []
    for model in (default, fused):
        state = model.new_state(2)
        model.prime(state, 1, ref)
        wavs.append(model.decode_streams(state, [1], [chunk])[0])
    torch.testing.assert_close(wavs[1], wavs[0], rtol=0, atol=ATOL)


def test_graphs_flag_needs_cuda(fused):
    with pytest.raises(ValueError, match="CUDA"):
        CodecGraphs(fused, fused.new_state(17), buckets=(16,), chunk_lengths=(1,), channels_last=True)


def test_fast_sine_reaches_every_snakebeta(monkeypatch, fused):
    """The codec's `fast_sine` setting (fuse_channels_last(..., fast_sine=True)) goes to each of the vocoder's 29
    SnakeBeta launches; the interpreter keeps tl.sin, so the audio equals the default channels-last decode."""
    import omni.kernels.channels_last as kernels

    model = _decoder(channels_last=False)
    fuse_channels_last(model, fast_sine=True)
    seen: list[bool] = []
    real = kernels.snakebeta_cl

    def recording(*args, **kwargs):
        seen.append(kwargs.get("fast_sin", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels, "snakebeta_cl", recording)
    got = model.decode(UTTERANCES[:1])
    assert len(seen) == 29 and all(seen)
    monkeypatch.setattr(kernels, "snakebeta_cl", real)
    torch.testing.assert_close(got, fused.decode(UTTERANCES[:1]), atol=0.0, rtol=0.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_residual_snake_kernel_changes_no_bit(dtype):
    """The decoder's `residual_snake_kernel` (each residual add also writes the next SnakeBeta): uneven primed
    streams and one-frame steps give the same waveforms and state, bit for bit, as the separate kernels."""
    runs = []
    for fused_snake in (False, True):
        model = tiny_codec_decoder(dtype)
        fuse_channels_last(model)
        model.residual_snake_kernel = fused_snake
        runs.append([stream(model), one_frame_steps(model)])
    for want, got in zip(*runs, strict=True):
        assert same_run(got, want)


def test_residual_snake_kernel_moves_every_unit_outputs_snakebeta_into_its_add(monkeypatch):
    """With `residual_snake_kernel`, the 12 SnakeBetas that read a residual unit's output (the next unit's first, the
    next block's, the final one) run inside the 12 residual adds, with the `fast_sine` setting; 17 stay separate."""
    import omni.kernels.channels_last as kernels

    model = _decoder(channels_last=False)
    fuse_channels_last(model, fast_sine=True)
    model.residual_snake_kernel = True
    snakes: list[bool] = []
    adds: list[tuple[bool, bool]] = []
    real_snake, real_add = kernels.snakebeta_cl, kernels.bias_residual_cl

    def snake(*args, **kwargs):
        snakes.append(kwargs.get("fast_sin", False))
        return real_snake(*args, **kwargs)

    def add(*args, **kwargs):
        adds.append((kwargs.get("snake") is not None, kwargs.get("fast_sin", False)))
        return real_add(*args, **kwargs)

    monkeypatch.setattr(kernels, "snakebeta_cl", snake)
    monkeypatch.setattr(kernels, "bias_residual_cl", add)
    model.decode(UTTERANCES[:1])
    assert len(snakes) == 17 and all(snakes)
    assert adds == [(True, True)] * 12


def test_upsample_channels_last_runs_every_conv_channels_last_and_decodes_as_the_default(default):
    """The decoder's `upsample_channels_last`: the upsamplers' transposed and depthwise convs join the vocoder's in
    channels-last memory (33 convs, each input, weight and output channels-last), and the audio is the default
    decoder's whole and chunked, primed and one frame a step, with scratch rows in codec_step."""
    model = _decoder(channels_last=True)
    model.upsample_channels_last = True
    wav, layouts = decode_recording_conv_layouts(model)
    assert len(layouts) == CONVS + 4 and all(all(flags) for flags in layouts), layouts
    torch.testing.assert_close(wav, default.decode(UTTERANCES), rtol=0, atol=ATOL)
    for run in (stream, one_frame_steps):
        (got, got_state), (want, want_state) = run(model), run(default)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=ATOL)
        for g, w in zip(got_state.tensors(), want_state.tensors(), strict=True):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=ATOL * max(1.0, float(w.abs().max())))
    codec_step_equals_default(default, model)


@pytest.mark.parametrize("swap", [False, True])
def test_upsample_channels_last_in_bf16_with_the_history_kernels(swap):
    """bf16, with the history kernels (`history_kernel`, and `history_swap_kernel`, whose buffers the upsamplers fill
    as the vocoder's convs do): the upsamplers in channels-last memory against the default layout."""
    runs = []
    for on in (False, True):
        model = tiny_codec_decoder(torch.bfloat16)
        fuse_channels_last(model)
        model.history_kernel, model.history_swap_kernel, model.upsample_channels_last = True, swap, on
        runs.append([stream(model), one_frame_steps(model)])
    for (got, got_state), (want, want_state) in zip(runs[1], runs[0], strict=True):
        for g, w in zip(got + got_state.tensors(), want + want_state.tensors(), strict=True):
            torch.testing.assert_close(g.float(), w.float(), rtol=0.02, atol=0.02 * max(1.0, float(w.abs().max())))
