"""A tiny codec decoder and an uneven streaming run over it, for tests that compare two builds of the decoder
(a kernel option on and off) on the same streams."""

import torch

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig, CodecState
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER, tiny_decoder_state

# Attention window of 4 (3 past frames), so a few frames already slide it; a narrow vocoder for the interpreter.
CFG = CodecDecoderConfig(**{**TINY_DECODER, "decoder_dim": 32, "sliding_window": 4})

UTTERANCES = torch.randint(0, 2048, (3, 9, 16), generator=torch.Generator().manual_seed(1))
# frames of streams 0..2 per step (0 = not in that step): uneven chunks, so rows are right-padded, windows slide
# past the state's 3 entries, and one step leaves a stream out
PLAN = [[1, 2, 4], [4, 0, 1], [2, 5, 3], [2, 2, 1]]


def tiny_codec_decoder(dtype: torch.dtype, cfg: CodecDecoderConfig = CFG) -> CodecDecoder:
    model = CodecDecoder(cfg)
    weights = tiny_decoder_state(cfg, torch.Generator().manual_seed(6))
    model.load_state_dict({k.removeprefix("decoder."): v for k, v in weights.items()})
    return model.to(dtype).eval()


def stream(model: CodecDecoder) -> tuple[list[torch.Tensor], CodecState]:
    """UTTERANCES decoded by PLAN in slots 3, 0, 4 of a 5-slot state, slot 0 primed with a reference first."""
    state = model.new_state(5)
    slots, done, out = [3, 0, 4], [0, 0, 0], []
    model.prime(state, 0, UTTERANCES[2, :5])  # a primed stream too: the reference's window in the state
    for sizes in PLAN:
        active = [i for i, n in enumerate(sizes) if n]
        chunks = [UTTERANCES[i, done[i] : done[i] + sizes[i]] for i in active]
        out += model.decode_streams(state, [slots[i] for i in active], chunks)
        for i in active:
            done[i] += sizes[i]
    return out, state


def one_frame_steps(model: CodecDecoder) -> tuple[list[torch.Tensor], CodecState]:
    """Three steps in which every row has one frame (T = 1, as the service's 1-frame graphs replay them: a size-1
    dim whose strides can be anything), streams 0..2 of UTTERANCES in slots 2, 0, 1 of a 4-slot state."""
    state = model.new_state(4)
    out = []
    for step in range(3):
        out += model.decode_streams(state, [2, 0, 1], [UTTERANCES[i, step : step + 1] for i in range(3)])
    return out, state


def same_run(got: tuple[list[torch.Tensor], CodecState], want: tuple[list[torch.Tensor], CodecState]) -> bool:
    """Two runs of `stream` or `one_frame_steps` alike, bit for bit: as many waveforms, each equal, and every state
    tensor equal."""
    (got_wavs, got_state), (want_wavs, want_state) = got, want
    pairs = zip(got_wavs + got_state.tensors(), want_wavs + want_state.tensors(), strict=True)
    return len(got_wavs) == len(want_wavs) and all(torch.equal(g, w) for g, w in pairs)
