"""kernels/vocoder_conv.py (a channels-last dilated conv as a Triton implicit GEMM) against PyTorch's conv1d, its
argument checks, its sm_90 compile, and tools/bench_vocoder_convs.py; CPU, Triton interpreter."""

import functools
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
import torch.nn.functional as F
from omni.kernels.tiles import Tiles
from omni.kernels.vocoder_conv import conv_matrix, tiles_for, vocoder_conv, vocoder_conv_residual

from omni.models.qwen3_tts import codec_graphs
from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import TRANSPOSED_GEMM_BLOCKS, fuse_channels_last
from tests.codec_streams import CFG, one_frame_steps, same_run, stream, tiny_codec_decoder
from tests.kernel_runners import compile_for_sm90, run_kernel_tool_on_cpu

# (batch, C_in, C_out, T_in, dilation, taps): several output tiles a row with a ragged last one, rows whose A tiles
# run into the next batch row and past the end, C_out past one N tile, a 1x1 conv, K steps over several channel blocks.
SHAPES = [(2, 32, 32, 40, 1, 7), (3, 64, 48, 70, 3, 7), (2, 32, 80, 100, 9, 7), (2, 64, 32, 33, 1, 1)]
TILES = Tiles(32, 32, 32, 4, 2)


def _conv_inputs(shape, seed):
    batch, c_in, c_out, length, dilation, taps = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, c_in, generator=gen).transpose(1, 2)  # [B, C, T] with [B, T, C] memory
    weight = torch.randn(c_out, c_in, taps, generator=gen) / (c_in * taps) ** 0.5
    return x, weight, torch.randn(c_out, generator=gen), dilation


@pytest.mark.parametrize("shape", SHAPES)
def test_vocoder_conv_is_conv1d(shape):
    x, weight, bias, dilation = _conv_inputs(shape, seed=sum(shape))
    want = F.conv1d(x.contiguous(), weight, bias, dilation=dilation)
    got = vocoder_conv(x, conv_matrix(weight), dilation, bias, TILES)
    assert got.shape == want.shape
    assert got.stride() == (want.shape[2] * want.shape[1], 1, want.shape[1])  # channels-last output
    assert (got - want).abs().max() <= 1e-5


def test_vocoder_conv_with_snakebeta_is_the_conv_then_snakebeta_cl():
    from omni.kernels.channels_last import snakebeta_cl

    x, weight, bias, dilation = _conv_inputs(SHAPES[2], seed=3)
    # seeded: from the global generator the draw depended on the tests run before in the process, and SnakeBeta's
    # slope (up to 1 + e^alpha / e^beta) scales the conv's fp32 reordering (2.1e-6 here) past 1e-5 in some draws
    alpha, beta = torch.randn(2, weight.shape[0], generator=torch.Generator().manual_seed(4)) * 0.5
    conv = F.conv1d(x.contiguous(), weight, dilation=dilation).transpose(1, 2).contiguous().transpose(1, 2)
    want = snakebeta_cl(conv, alpha, beta, bias=bias)
    got = vocoder_conv(x, conv_matrix(weight), dilation, bias, TILES, snake=(alpha, beta))
    assert (got - want).abs().max() <= 1e-5
    assert (got - vocoder_conv(x, conv_matrix(weight), dilation, bias, TILES)).abs().max() > 0.1  # SnakeBeta applied


@pytest.mark.parametrize("snake", [False, True])
def test_vocoder_conv_residual_is_conv_then_bias_residual_cl(snake):
    """conv2's close: x + conv(h) + bias, and with `snake` the next SnakeBeta into a [history ‖ new] buffer's tail,
    as bias_residual_cl computes them from the conv's output. x a strided slice (a transposed conv's trimmed output),
    the output tiles ragged along T and C."""
    from omni.kernels.channels_last import bias_residual_cl

    gen = torch.Generator().manual_seed(11)
    batch, channels, length = 3, 80, 37
    h = torch.randn(batch, length, channels, generator=gen).transpose(1, 2)
    weight = torch.randn(channels, channels, 1, generator=gen) / channels**0.5
    x = torch.randn(batch, length + 5, channels, generator=gen).transpose(1, 2)[..., 2 : 2 + length]
    bias, alpha, beta = torch.randn(3, channels, generator=gen) * 0.5
    conv = F.conv1d(h.contiguous(), weight).transpose(1, 2).contiguous().transpose(1, 2)
    fused: dict = {}
    if snake:
        buffers = [torch.full((batch, length + 4, channels), 7.0).transpose(1, 2) for _ in range(2)]
        fused = [{"snake": (alpha, beta), "snake_out": buffer[..., 4:]} for buffer in buffers]
    want = bias_residual_cl(x, conv, bias, **(fused[0] if snake else {}))
    tiles = Tiles(32, 32, 16, 4, 2)  # BLOCK_K must divide the 80 channels
    got = vocoder_conv_residual(h, conv_matrix(weight), x, bias, tiles, **(fused[1] if snake else {}))
    assert got.stride() == want.stride()
    assert (got - want).abs().max() <= 1e-5
    assert (got - (x + conv)).abs().max() > 0.1  # the bias is added
    if snake:
        assert (buffers[1] - buffers[0]).abs().max() <= 1e-5
        assert (buffers[1][..., :4] == 7.0).all()  # the history part untouched
        assert (buffers[1][..., 4:] - got).abs().max() > 0.1  # SnakeBeta applied


def test_vocoder_conv_residual_refuses_mismatched_operands():
    h = torch.randn(2, 40, 32).transpose(1, 2)
    w = conv_matrix(torch.randn(32, 32, 1))
    x, bias = torch.randn(2, 40, 32).transpose(1, 2), torch.randn(32)
    with pytest.raises(ValueError, match="channels-last \\[2, 32, 40\\]"):
        vocoder_conv_residual(h, w, x.contiguous(), bias, TILES)  # [B, C, T] memory
    with pytest.raises(ValueError, match="channels-last \\[2, 32, 40\\]"):
        vocoder_conv_residual(h, w, x[..., 1:], bias, TILES)
    with pytest.raises(ValueError, match="bias must be \\[32\\]"):
        vocoder_conv_residual(h, w, x, bias[:16], TILES)
    with pytest.raises(ValueError, match="go together"):
        vocoder_conv_residual(h, w, x, bias, TILES, snake=(bias, bias))
    with pytest.raises(ValueError, match="snake_out must be a channels-last"):
        vocoder_conv_residual(h, w, x, bias, TILES, snake=(bias, bias), snake_out=x.contiguous())


@pytest.mark.parametrize("stride", [3, 5])
def test_transposed_matrix_makes_the_upsampler_a_two_tap_conv(stride):
    """A vocoder block's transposed conv (kernel 2r, stride r) over [history ‖ new], as CausalConvTranspose1d trims
    it, equals vocoder_conv with transposed_matrix's r*C_out columns, viewed as samples by phases_to_samples."""
    from omni.kernels.vocoder_conv import phases_to_samples, transposed_matrix

    gen = torch.Generator().manual_seed(stride)
    batch, c_in, c_out, length = 3, 32, 16, 11
    weight = torch.randn(c_in, c_out, 2 * stride, generator=gen) / c_in**0.5
    full = torch.randn(batch, length + 1, c_in, generator=gen).transpose(1, 2)  # one carried sample
    want = F.conv_transpose1d(full.contiguous(), weight, stride=stride)[..., stride : stride * (length + 1)]
    y = vocoder_conv(full, transposed_matrix(weight, stride), tiles=Tiles(32, 32, 16, 4, 2))
    got = phases_to_samples(y, stride)
    assert got.shape == want.shape and got.stride(1) == 1  # channels-last samples
    assert (got - want).abs().max() <= 1e-5
    with pytest.raises(ValueError, match="kernel 6 is not twice the stride 2"):
        transposed_matrix(torch.randn(4, 4, 6), 2)


def test_vocoder_conv_without_bias_and_in_half_precision():
    x, weight, _, dilation = _conv_inputs(SHAPES[1], seed=7)
    want = F.conv1d(x.contiguous(), weight, dilation=dilation)
    got = vocoder_conv(x, conv_matrix(weight), dilation, tiles=TILES)
    assert (got - want).abs().max() <= 1e-5
    # fp16, not bf16: the interpreter's tensor-descriptor loads misread bf16 (numpy has no bf16); the GPU tool
    # (tools/bench_vocoder_convs.py) compares bf16 with cuDNN.
    half = vocoder_conv(x.half(), conv_matrix(weight.half()), dilation, tiles=TILES)
    exact = F.conv1d(x.half().float().contiguous(), weight.half().float(), dilation=dilation)
    assert half.dtype == torch.float16
    assert (half.float() - exact).abs().max() <= 2**-10 * exact.abs().max()  # one fp16 rounding of the output


def test_vocoder_conv_refuses_what_it_cannot_run():
    x, weight, _, _ = _conv_inputs(SHAPES[0], seed=1)
    w = conv_matrix(weight)
    with pytest.raises(ValueError, match="dense"):
        vocoder_conv(x.contiguous(), w, tiles=TILES)  # [B, C, T] memory: the rows are not channels
    with pytest.raises(ValueError, match="multiples of 16 bytes"):
        vocoder_conv(x[:, :2].contiguous().transpose(1, 2).contiguous().transpose(1, 2), w[:14], tiles=TILES)
    with pytest.raises(ValueError, match="BLOCK_K 64 must divide C_in 32"):
        vocoder_conv(x, w, tiles=Tiles(32, 32, 64, 4, 2))
    with pytest.raises(ValueError, match="T_out -14"):
        vocoder_conv(x, w, dilation=9, tiles=TILES)  # 40 samples, 6 x 9 of them taken by the taps
    with pytest.raises(ValueError, match="BMxBNxBKwWARPSsSTAGES"):
        Tiles.parse("128x128x32")
    assert str(Tiles.parse("128x64x32w8s3")) == "128x64x32w8s3"


def test_tiles_for_picks_a_block_k_that_divides_the_channels():
    assert [tiles_for(c).block_k for c in (768, 384, 192, 96, 16, 2)] == [64, 64, 64, 32, 16, 2]
    assert [tiles_for(c, "conv2").block_k for c in (1536, 96, 48)] == [64, 32, 16]
    assert tiles_for(1536, "transposed") != tiles_for(1536)  # a timed entry is its conv's alone
    with pytest.raises(ValueError, match="conv 'conv3'"):
        tiles_for(768, "conv3")


# tests/codec_streams' decoder with a wider vocoder: 64 -> 8 channels, so every row is a multiple of 16 bytes (the
# tensor descriptors' rule; 2 channels of 4 bytes are not)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vocoder_conv_transposed_writes_the_first_units_snakebeta(dtype):
    """The transposed conv's samples as vocoder_conv + phases_to_samples gives them (no bias), and SnakeBeta(samples +
    bias) in a [history ‖ new] buffer's tail as snakebeta_cl writes it from those samples: same bits (an element-wise
    epilogue on the rounded output), the history part untouched. 3 phases of 24 channels: a 32-column tile holds
    parts of two phases, and the last tile is ragged."""
    from omni.kernels.channels_last import snakebeta_cl
    from omni.kernels.vocoder_conv import phases_to_samples, transposed_matrix, vocoder_conv_transposed

    gen = torch.Generator().manual_seed(5)
    batch, c_in, c_out, length, stride = 2, 32, 24, 9, 3
    w = transposed_matrix(torch.randn(c_in, c_out, 2 * stride, generator=gen) / c_in**0.5, stride).to(dtype)
    full = torch.randn(batch, length + 1, c_in, generator=gen).to(dtype).transpose(1, 2)
    bias, alpha, beta = (torch.randn(3, c_out, generator=gen) * 0.5).to(dtype)
    tiles = Tiles(16, 32, 16, 4, 2)
    plain = phases_to_samples(vocoder_conv(full, w, tiles=tiles), stride)
    buffers = [torch.full((batch, 4 + length * stride, c_out), 7.0, dtype=dtype).transpose(1, 2) for _ in range(2)]
    want = snakebeta_cl(plain, alpha, beta, out=buffers[0][..., 4:], bias=bias)
    got = vocoder_conv_transposed(full, w, stride, tiles, (alpha, beta), bias, buffers[1][..., 4:])
    assert torch.equal(got, plain) and got.stride(1) == 1
    assert torch.equal(buffers[1], buffers[0])
    assert (buffers[1][..., :4] == 7.0).all()
    assert _max_abs(want, plain) > 0.1  # SnakeBeta applied
    assert _max_abs(snakebeta_cl(plain, alpha, beta), want) > 0.01  # the bias added before it


def test_vocoder_conv_transposed_refuses_mismatched_operands():
    from omni.kernels.vocoder_conv import transposed_matrix, vocoder_conv_transposed

    w = transposed_matrix(torch.randn(16, 8, 4), 2)
    full = torch.randn(2, 6, 16).transpose(1, 2)
    snake, bias = (torch.zeros(8), torch.zeros(8)), torch.zeros(8)
    tail = torch.zeros(2, 12, 8).transpose(1, 2)
    with pytest.raises(ValueError, match="16 columns are not 3 phases"):
        vocoder_conv_transposed(full, w, 3)
    with pytest.raises(ValueError, match="go together, and bias only with them"):
        vocoder_conv_transposed(full, w, 2, bias=bias)
    with pytest.raises(ValueError, match="go together"):
        vocoder_conv_transposed(full, w, 2, snake=snake, bias=bias)
    with pytest.raises(ValueError, match="snake_out must be a channels-last \\[2, 8, 10\\]"):
        vocoder_conv_transposed(full, w, 2, snake=snake, bias=bias, snake_out=tail)
    wide = torch.zeros(2, 10, 16).transpose(1, 2)[:, :8]  # channels-last, but rows 16 channels apart
    with pytest.raises(ValueError, match="rows must be dense \\(8 channels apart\\)"):
        vocoder_conv_transposed(full, w, 2, snake=snake, bias=bias, snake_out=wide)
    with pytest.raises(ValueError, match="bias must be \\[8\\]"):
        vocoder_conv_transposed(full, w, 2, snake=snake, bias=bias[:4], snake_out=tail[..., :10])


def test_flat_tiles_where_they_are_markedly_fewer():
    from omni.kernels.vocoder_conv import flat_tiles

    assert flat_tiles(128, 5, 4, 128)  # an upsampler at one frame: 5 tiles flat, 128 within rows
    assert flat_tiles(128, 32, 32, 128)  # a 1x1 conv: never more tiles flat
    assert flat_tiles(128, 486, 480, 128)  # conv1 at dilation 1 over 480 samples: 486 flat, 512 within rows (-5.1%)
    assert not flat_tiles(128, 534, 480, 128)  # conv1 at dilation 9 over 480 samples: 534 flat, 512 within rows
    assert not flat_tiles(1, 200, 190, 128)  # one row: 2 tiles either way
    assert not flat_tiles(128, 128, 128, 128)  # the same count: within rows
    # Fewer by less than 3%: within rows (run 244: the two dilation-3 conv1s at 128x15 ran ~10% faster so).
    assert not flat_tiles(128, 498, 480, 128)  # 498 flat against 512
    assert not flat_tiles(128, 2418, 2400, 128)  # 2,418 flat against 2,432


def test_flat_and_row_tiles_give_the_same_bits(monkeypatch):
    """M tiles across batch rows (flat: a row's last T_in - T_out outputs computed, not stored) or within each row:
    the same outputs, residual sums and SnakeBeta buffers, bit for bit, for a dilated conv1 with its SnakeBeta, a
    conv2 close with the next SnakeBeta and a transposed conv with the first SnakeBeta (rows of 9 new samples: tiles
    of 16 span rows, and the last is ragged)."""
    import omni.kernels.vocoder_conv as vocoder_conv_module
    from omni.kernels.vocoder_conv import transposed_matrix, vocoder_conv_transposed

    gen = torch.Generator().manual_seed(9)
    batch, channels, length = 3, 32, 9
    tiles = Tiles(16, 32, 16, 4, 2)
    x = torch.randn(batch, length + 18, channels, generator=gen).transpose(1, 2)
    h = torch.randn(batch, length, channels, generator=gen).transpose(1, 2)
    res = torch.randn(batch, length, channels, generator=gen).transpose(1, 2)
    w7 = conv_matrix(torch.randn(channels, channels, 7, generator=gen) / channels)
    w1 = conv_matrix(torch.randn(channels, channels, 1, generator=gen) / channels**0.5)
    wt = transposed_matrix(torch.randn(channels, 16, 4, generator=gen) / channels**0.5, 2)
    bias, alpha, beta = torch.randn(3, channels, generator=gen) * 0.5
    full_t = torch.randn(batch, length + 1, channels, generator=gen).transpose(1, 2)

    def run(flat: bool) -> list[torch.Tensor]:
        monkeypatch.setattr(vocoder_conv_module, "flat_tiles", lambda *_: flat)
        snaked = [torch.full((batch, 2 + n, c), 7.0).transpose(1, 2) for n, c in ((length, channels), (18, 16))]
        return [
            vocoder_conv(x, w7, 3, bias, tiles, snake=(alpha, beta)),
            vocoder_conv_residual(h, w1, res, bias, tiles, (alpha, beta), snaked[0][..., 2:]),
            vocoder_conv_transposed(full_t, wt, 2, tiles, (alpha[:16], beta[:16]), bias[:16], snaked[1][..., 2:]),
            *snaked,
        ]

    rows, flat = run(False), run(True)
    for got, want in zip(flat, rows, strict=True):
        assert torch.equal(got, want)
    assert (flat[3][..., :2] == 7.0).all() and (flat[4][..., :2] == 7.0).all()  # the histories untouched


def test_vocoder_conv_flat_argument_overrides_the_rule(monkeypatch):
    """vocoder_conv(flat=True / False) tiles as told without asking flat_tiles (the same bits either way); with
    flat=None it asks."""
    import omni.kernels.vocoder_conv as vocoder_conv_module

    def refuse(*_):
        raise AssertionError("flat_tiles asked")

    monkeypatch.setattr(vocoder_conv_module, "flat_tiles", refuse)
    gen = torch.Generator().manual_seed(10)
    x = torch.randn(3, 9 + 6, 32, generator=gen).transpose(1, 2)
    w = conv_matrix(torch.randn(32, 32, 7, generator=gen) / 32)
    tiles = Tiles(16, 32, 16, 4, 2)
    assert torch.equal(vocoder_conv(x, w, 1, tiles=tiles, flat=True), vocoder_conv(x, w, 1, tiles=tiles, flat=False))
    with pytest.raises(AssertionError, match="flat_tiles asked"):
        vocoder_conv(x, w, 1, tiles=tiles)


WIDE = CodecDecoderConfig(**{**CFG.__dict__, "decoder_dim": 128})


@functools.cache  # each build decoded once for the module (the interpreter takes seconds a run)
def _decode(
    dtype, *switches: str, one_frame_too: bool = True, transposed_blocks: tuple[int, ...] = TRANSPOSED_GEMM_BLOCKS
):
    """Uneven primed streams (and one-frame steps) through the channels-last vocoder with these kernel switches on,
    its upsamplers' GEMM on `transposed_blocks` (an argument, so a key of the cache: the vocoder reads
    TRANSPOSED_GEMM_BLOCKS when it is built)."""
    model = tiny_codec_decoder(dtype, WIDE)
    default_blocks = codec_graphs.TRANSPOSED_GEMM_BLOCKS
    codec_graphs.TRANSPOSED_GEMM_BLOCKS = transposed_blocks
    try:
        fuse_channels_last(model)
    finally:
        codec_graphs.TRANSPOSED_GEMM_BLOCKS = default_blocks
    model.residual_snake_kernel = True  # the service's default
    for name in switches:
        setattr(model, name, True)
    return (stream(model), one_frame_steps(model)) if one_frame_too else (stream(model),)


GEMM_SWITCHES = ("conv1_kernel", "conv2_kernel", "transposed_kernel")


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


@pytest.mark.parametrize(
    ("switches", "transposed_blocks"),
    [((name,), TRANSPOSED_GEMM_BLOCKS) for name in GEMM_SWITCHES]
    + [
        (GEMM_SWITCHES, TRANSPOSED_GEMM_BLOCKS),
        (("transposed_kernel", "history_swap_kernel"), TRANSPOSED_GEMM_BLOCKS),
        (("transposed_kernel",), (0, 1, 2, 3)),
    ],
    # swap: the history written at keep (the default); every-block: the GEMM for each block's upsampler
    ids=["conv1", "conv2", "transposed", "all", "transposed-swap", "transposed-every-block"],
)
def test_decoder_with_gemm_convs_equals_without_in_fp32(switches, transposed_blocks):
    """Uneven primed streams and one-frame steps through the channels-last vocoder, conv1 + SnakeBeta, conv2 + the
    add + the next SnakeBeta, or the transposed convs by the implicit GEMM, or by PyTorch's convs and the
    channels-last kernels: waveforms and state within the GEMM's reordering."""
    want = _decode(torch.float32)
    got = _decode(torch.float32, *switches, transposed_blocks=transposed_blocks)
    for (want_wavs, want_state), (got_wavs, got_state) in zip(want, got, strict=True):
        assert max(_max_abs(g, w) for g, w in zip(got_wavs, want_wavs, strict=True)) <= 1e-5
        for g, w in zip(got_state.tensors(), want_state.tensors(), strict=True):
            assert _max_abs(g, w) <= 1e-5 * max(1.0, float(w.abs().max()))
    if "conv1_kernel" in switches:  # another summation order: not the bits (conv2's one K step of 64 channels may
        assert not all(same_run(g, w) for g, w in zip(got, want, strict=True))  # sum as PyTorch's CPU conv does)


def test_decoder_with_gemm_convs_in_bf16_is_as_close_to_fp32_as_without():
    (reference, _), *_ = _decode(torch.float32)  # the uneven streams (the one-frame steps: the fp32 test)

    def error(*switches: str) -> float:
        ((wavs, _),) = _decode(torch.bfloat16, *switches, one_frame_too=False)
        return max(_max_abs(g, w) for g, w in zip(wavs, reference, strict=True))

    assert error(*GEMM_SWITCHES) <= 1.5 * max(error(), 1e-2)


def test_convs_too_narrow_for_the_kernel_stay_cudnns():
    """tests/codec_streams' decoder narrows to 4-channel rows (8 bytes of bf16, under the descriptors' 16): with every
    GEMM switch on, the convs whose widths do not fit (`vocoder_conv.fits`) keep PyTorch's conv, the others take the
    GEMM, and the decode runs, within the GEMM's reordering of the plain one."""
    from omni.kernels.vocoder_conv import fits

    model = tiny_codec_decoder(torch.float32)
    fuse_channels_last(model)
    model.residual_snake_kernel = True
    vocoder = model.channels_last_vocoder
    units = list(vocoder.next_snake)
    narrow = [u for u in units if not fits(u.conv2.conv.in_channels, u.conv2.conv.out_channels)]
    assert narrow and len(narrow) < len(units)  # both kinds in this decoder
    assert vocoder.conv2_gemm == set(units) - set(narrow)
    assert not any(unit in vocoder.conv1_matrices for unit in narrow)
    assert all(fits(up.conv.in_channels, up.conv.out_channels) for up in vocoder.transposed_matrices)
    want = one_frame_steps(model)
    for name in GEMM_SWITCHES:
        setattr(model, name, True)
    got = one_frame_steps(model)
    assert max(_max_abs(g, w) for g, w in zip(got[0], want[0], strict=True)) <= 1e-5


def test_only_the_dilated_conv1s_take_the_kernel():
    """Dilation 1 stays cuDNN's (run 233: there the GEMM took 0.96-1.19x cuDNN's time); each block's units with
    dilation 3 and 9 get a weight matrix, so the kernel."""
    model = CodecDecoder(WIDE).eval()
    fuse_channels_last(model)
    vocoder = model.channels_last_vocoder
    assert sorted(unit.conv1.conv.dilation[0] for unit in vocoder.conv1_matrices) == [3, 3, 3, 3, 9, 9, 9, 9]


def _count_calls(monkeypatch, module, name: str, calls: dict, key: str) -> None:
    """module.name, still run, counted in calls[key] (the decoder imports the kernels' functions at each call)."""
    fn = getattr(module, name)

    def run(*args, **kwargs):
        calls[key] += 1
        return fn(*args, **kwargs)

    monkeypatch.setattr(module, name, run)


def test_conv2_kernel_runs_every_units_conv2_through_the_gemm(monkeypatch):
    """With conv2_kernel each of the 12 residual units closes through vocoder_conv_residual, once a step, and
    bias_residual_cl is not called."""
    import omni.kernels.channels_last as channels_last
    import omni.kernels.vocoder_conv as vocoder_conv_module

    calls = {"gemm": 0, "separate": 0}
    _count_calls(monkeypatch, vocoder_conv_module, "vocoder_conv_residual", calls, "gemm")
    _count_calls(monkeypatch, channels_last, "bias_residual_cl", calls, "separate")
    model = tiny_codec_decoder(torch.float32, WIDE)
    fuse_channels_last(model)
    model.residual_snake_kernel = model.conv2_kernel = True
    one_frame_steps(model)
    assert calls["gemm"] > 0 and calls["gemm"] % 12 == 0 and calls["separate"] == 0
    calls["gemm"] = 0
    model.conv2_kernel = False
    one_frame_steps(model)
    assert calls["gemm"] == 0 and calls["separate"] > 0


@pytest.mark.parametrize("blocks", [TRANSPOSED_GEMM_BLOCKS, (0, 1, 2, 3)], ids=["default", "every-block"])
def test_transposed_kernel_writes_each_blocks_first_snakebeta(monkeypatch, blocks):
    """With transposed_kernel the transposed conv of each block in TRANSPOSED_GEMM_BLOCKS, and only those, goes
    through vocoder_conv_transposed, whose epilogue writes the first unit's SnakeBeta: one snakebeta_cl call fewer per
    such block a step than with it off."""
    import omni.kernels.channels_last as channels_last
    import omni.kernels.vocoder_conv as vocoder_conv_module

    monkeypatch.setattr(codec_graphs, "TRANSPOSED_GEMM_BLOCKS", blocks)
    calls = {"transposed": 0, "snake": 0}
    _count_calls(monkeypatch, vocoder_conv_module, "vocoder_conv_transposed", calls, "transposed")
    _count_calls(monkeypatch, channels_last, "snakebeta_cl", calls, "snake")
    model = tiny_codec_decoder(torch.float32, WIDE)
    fuse_channels_last(model)
    model.residual_snake_kernel = True
    one_frame_steps(model)
    assert calls["transposed"] == 0
    separate = calls["snake"]
    model.transposed_kernel = True
    calls["snake"] = 0
    one_frame_steps(model)
    assert calls["transposed"] > 0 and calls["transposed"] % len(blocks) == 0
    assert calls["snake"] == separate - calls["transposed"]
    upsamplers = [block.block[1] for block in model.decoder[1:-2]]
    assert set(model.channels_last_vocoder.transposed_matrices) == {upsamplers[i] for i in blocks}


def test_unit_tail_kernel_takes_conv1_as_cudnn_runs_it():
    """With unit_tail_kernel on, conv1_kernel leaves conv1 to cuDNN (the tail GEMM applies the SnakeBeta itself) and
    conv2_kernel has nothing left to do."""
    got = _decode(torch.float32, "conv1_kernel", "unit_tail_kernel", "conv2_kernel")
    want = _decode(torch.float32, "unit_tail_kernel")
    assert all(same_run(g, w) for g, w in zip(got, want, strict=True))


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels.vocoder_conv import _vocoder_conv_kernel

signature = {"x_desc": "tensordesc<bf16[128, 32]>", "w_desc": "tensordesc<bf16[32, 128]>"}
signature |= {n: "*bf16" for n in ("y_ptr", "bias_ptr", "res_ptr", "snake_ptr")}
signature |= {"alpha_ptr": "*fp32", "beta_ptr": "*fp32"}
ints = ("length_in", "length_out", "out_channels", "y_stride_b", "y_stride_t", "res_stride_b", "res_stride_t")
signature |= {n: "i32" for n in ("batch", *ints, "snake_stride_b", "snake_stride_t", "dilation")}
flags = ("IN_CHANNELS", "TAPS", "HAS_BIAS", "SNAKE", "RESIDUAL", "PHASES", "FAST_SIN", "IEEE", "FLAT")
signature |= {n: "constexpr" for n in (*flags, "BLOCK_M", "BLOCK_N", "BLOCK_K")}
# the plain conv; conv1 with its bias and SnakeBeta (fast sine) in the epilogue; conv2 (1x1) with the residual add
# and the next SnakeBeta; a transposed conv of stride 3 (2 taps) with the next SnakeBeta
counts = []
cases = ((7, False, False, 1), (7, True, False, 1), (1, True, True, 1), (2, True, False, 3))
for taps, snake, residual, phases in cases:
    constexprs = {"IN_CHANNELS": 96, "TAPS": taps, "HAS_BIAS": snake, "SNAKE": snake, "RESIDUAL": residual}
    constexprs |= {"PHASES": phases, "FLAT": phases > 1}  # the transposed conv with M tiles across batch rows
    constexprs |= {"FAST_SIN": snake, "IEEE": False, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}
    compiled = compile(ASTSource(_vocoder_conv_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 4})
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx, "Hopper's warpgroup MMA"
    assert "cp.async.bulk.tensor" in ptx, "tensor-memory-accelerator loads"
    assert ("sin.approx" in ptx) == snake
    counts.append((ptx.count("st.global"), ptx.count("ld.global")))
plain, conv1, conv2, transposed = counts
assert conv2[0] == 2 * plain[0], "conv2 stores its output and the next SnakeBeta"
assert transposed[0] == 2 * plain[0], "the transposed conv stores its output and the next SnakeBeta"
assert conv2[1] > conv1[1] + 64, "conv2 loads the residual"
print("compiled")
"""


def test_kernel_compiles_for_sm90_with_wgmma_and_tma(tmp_path):
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_bench_vocoder_convs_times_every_conv_and_side(tmp_path):
    """tools/bench_vocoder_convs.py on CPU (interpreter, tiny widths): a row for each of the 12 convs and each side,
    the Triton side within fp32 reordering of cuDNN's (here PyTorch's CPU conv) output, a tile that cannot run
    reported as an error row."""
    done, rows = run_kernel_tool_on_cpu(
        "bench_vocoder_convs.py", tmp_path, "--rows", "1", "--frames", "1", "--tiles", "64x16x4w4s2", "64x16x32w4s2"
    )
    tiles = ["triton 64x16x4w4s2", "triton 64x16x32w4s2"]
    sides = ["cudnn", "cudnn-t", *tiles, "cudnn+snake", *(t + "+snake" for t in tiles)]
    assert [r["side"] for r in rows] == sides * 12  # four blocks x dilations 1, 3, 9
    timed = [r for r in rows if "error" not in r]
    assert all(r["rel_diff"] <= 1e-5 and r["ms"] > 0 for r in timed)
    assert {r["side"] for r in rows if "error" in r} == {tiles[1], tiles[1] + "+snake"}  # BLOCK_K 32 > tiny widths
    assert "triton best tiles+snake" in done.stdout


def test_bench_vocoder_convs_times_both_tilings(tmp_path):
    """--both-tilings: each Triton side also forced flat and within rows, all within fp32 reordering of cuDNN's."""
    _, rows = run_kernel_tool_on_cpu(
        "bench_vocoder_convs.py", tmp_path, "--rows", "2", "--frames", "1", "--tiles", "64x16x4w4s2", "--both-tilings"
    )
    t = "triton 64x16x4w4s2"
    sides = ["cudnn", "cudnn-t", t, t + " flat", t + " rows", "cudnn+snake"] + [
        t + s + "+snake" for s in ("", " flat", " rows")
    ]
    assert [r["side"] for r in rows] == sides * 12
    assert all(r["rel_diff"] <= 1e-5 and r["ms"] > 0 for r in rows)


def test_bench_vocoder_convs_times_the_transposed_convs(tmp_path):
    """--transposed: a row for each of the four upsamplers (rate in the dilation column) and side, the Triton sides
    within fp32 reordering of PyTorch's transposed conv and of it + snakebeta_cl."""
    done, rows = run_kernel_tool_on_cpu(
        "bench_vocoder_convs.py", tmp_path, "--rows", "1", "--frames", "1", "--tiles", "64x16x4w4s2", "--transposed"
    )
    assert [(r["conv"], r["dilation"], r["side"]) for r in rows] == [
        ("transposed", rate, side)
        for rate in (8, 5, 4, 3)
        for side in ("cudnn", "triton 64x16x4w4s2", "cudnn+snake", "triton 64x16x4w4s2+snake")
    ]
    assert all(r["rel_diff"] <= 1e-5 and r["ms"] > 0 for r in rows)
    assert "the step's 4 transposed convs" in done.stdout and "triton best tiles+snake" in done.stdout
