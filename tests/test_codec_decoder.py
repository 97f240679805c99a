"""Codec decoder: whole-utterance parity with qwen-tts 0.1.1, loading, bf16, state size, bad input.

Parity runs on two tiny checkpoints: one from our generator (codec_checkpoint.py) and one written by the reference
classes' own `save_pretrained`. The reference decodes up to 300 frames in one piece (its chunked_decode uses 300-frame
chunks), which is where it is itself exact; we compare there at 1e-4 max abs in fp32.
"""

import numpy as np
import pytest
import torch

from omni.models.qwen3_tts.codec import (
    CodecDecoder,
    CodecDecoderConfig,
    load_codec_decoder,
    state_bytes_per_slot,
)
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER, TINY_ENCODER, write_tiny_speech_tokenizer
from omni.models.weights import CheckpointError, read_safetensors, save_safetensors
from tests.reference import run_reference

LENGTHS = [300, 1, 37]  # one long utterance, the shortest, one odd length


def random_codes(frames: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 2048, (frames, 16), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Checkpoint dirs by name and the reference's decode of LENGTHS codes on each (one reference run)."""
    root = tmp_path_factory.mktemp("codec")
    ours = write_tiny_speech_tokenizer(root / "ours", seed=0)
    theirs = root / "reference"
    code_files = []
    for i, n in enumerate(LENGTHS):
        path = root / f"codes_{i}.npy"
        np.save(path, random_codes(n, seed=100 + i).numpy())
        code_files.append(str(path))
    save = {"op": "save", "out": str(theirs), "seed": 7, "encoder_config": TINY_ENCODER, "decoder_config": TINY_DECODER}
    # Grouped-query attention (2 heads, 1 K/V head) is not in the released config but is in the reference code.
    gqa = write_tiny_speech_tokenizer(root / "gqa", seed=1, decoder_num_key_value_heads=1)
    # The reference pads a batch to its longest member, so the 300-frame one is decoded on its own.
    ops = [save]
    for model in (ours, theirs):
        ops += [{"op": "decode", "model": str(model), "codes": code_files[:1]}]
        ops += [{"op": "decode", "model": str(model), "codes": code_files[1:]}]
    ops += [{"op": "decode", "model": str(gqa), "codes": code_files[1:]}]
    out = run_reference("ref_codec.py", {"ops": ops})
    wavs = {
        "ours": {0: out["1.wav_0"], 1: out["2.wav_0"], 2: out["2.wav_1"]},
        "reference": {0: out["3.wav_0"], 1: out["4.wav_0"], 2: out["4.wav_1"]},
        "gqa": {1: out["5.wav_0"], 2: out["5.wav_1"]},
    }
    return {"ours": ours, "reference": theirs, "gqa": gqa}, wavs


@pytest.mark.parametrize("which", ["ours", "reference", "gqa"])
def test_whole_decode_matches_reference(checkpoints, which):
    dirs, wavs = checkpoints
    decoder = load_codec_decoder(dirs[which])
    for i, ref in wavs[which].items():
        n = LENGTHS[i]
        wav = decoder.decode(random_codes(n, seed=100 + i)[None])[0].numpy()
        assert wav.shape == ref.shape == (n * 1920,)
        assert np.abs(wav - ref).max() < 1e-4, f"{which}, {n} frames"
        # The comparison means something only if the audio is not silent or clipped everywhere.
        assert 0.02 < ref.std() and np.mean(np.abs(ref) >= 1.0) < 0.01


def test_model_folder_or_speech_tokenizer_folder(checkpoints, tmp_path):
    dirs, _ = checkpoints
    model_dir = tmp_path / "model"
    write_tiny_speech_tokenizer(model_dir / "speech_tokenizer", seed=0)
    codes = random_codes(5, seed=1)[None]
    a = load_codec_decoder(model_dir).decode(codes)
    b = load_codec_decoder(dirs["ours"]).decode(codes)
    assert torch.equal(a, b)
    with pytest.raises(CheckpointError, match="no speech tokenizer"):
        load_codec_decoder(tmp_path)


def test_batch_rows_are_independent_and_long_decode_chunks_exactly(checkpoints):
    decoder = load_codec_decoder(checkpoints[0]["ours"])
    codes = torch.stack([random_codes(50, seed=1), random_codes(50, seed=2)])
    batch = decoder.decode(codes)
    assert batch.shape == (2, 50 * 1920)
    for row in range(2):
        assert (batch[row] - decoder.decode(codes[row : row + 1])[0]).abs().max() < 1e-5
    # Whole decodes longer than max_chunk_frames go through the streaming path in pieces; same samples.
    decoder.max_chunk_frames = 7
    assert (decoder.decode(codes) - batch).abs().max() < 1e-5


def test_strict_loading_names_the_bad_key(tmp_path):
    directory = write_tiny_speech_tokenizer(tmp_path / "st", seed=0)
    tensors = read_safetensors(directory)
    del tensors["decoder.pre_transformer.layers.0.mlp.up_proj.weight"]
    save_safetensors(tensors, directory / "model.safetensors")
    with pytest.raises(CheckpointError, match="up_proj"):
        load_codec_decoder(directory)


def test_bad_codes_get_clear_errors(checkpoints):
    decoder = load_codec_decoder(checkpoints[0]["ours"])
    with pytest.raises(ValueError, match=r"\[0, 2048\)"):
        decoder.decode(torch.full((1, 3, 16), 2048))
    with pytest.raises(ValueError, match=r"\[0, 2048\)"):
        decoder.decode(torch.full((1, 3, 16), -1))
    with pytest.raises(ValueError, match="shape"):
        decoder.decode(torch.zeros(1, 3, 15, dtype=torch.long))
    with pytest.raises(ValueError, match="integer"):
        decoder.decode(torch.zeros(1, 3, 16))


def test_bf16_runs_close_to_fp32(checkpoints):
    codes = random_codes(40, seed=3)
    fp32 = load_codec_decoder(checkpoints[0]["ours"]).decode(codes[None])[0]
    bf16_decoder = load_codec_decoder(checkpoints[0]["ours"], dtype=torch.bfloat16)
    bf16 = bf16_decoder.decode(codes[None])[0]
    assert bf16.dtype == torch.bfloat16
    err = (bf16.float() - fp32).abs()
    # bf16 keeps 8 mantissa bits; through ~40 layers the waveform stays within a few percent of full scale.
    assert err.max() < 0.1 and err.mean() < 0.01, (err.max(), err.mean())
    # The streaming path runs in bf16 too, with a bf16 state.
    state = bf16_decoder.new_state(2)
    assert state.key.dtype == torch.bfloat16 and state.history[0].dtype == torch.bfloat16
    out = bf16_decoder.decode_streams(state, [1], [codes[:3]])[0]
    assert out.shape == (3 * 1920,) and torch.isfinite(out.float()).all()


def test_state_bytes_per_slot_at_the_released_config():
    """Real decoder: 8 layers x 71 x (16 heads x 64) keys and values, plus every conv's input history."""
    kv = 8 * 71 * 16 * 64 * 2
    convs = (
        2 * 512  # pre_conv
        + 2 * 6 * 1024  # ConvNeXt depthwise convs
        + 6 * 1024  # conv0
        + sum(c * 2 + 78 * c for c in (768, 384, 192, 96))  # each block: transposed conv carry (in = 2c) + 6+18+54
        + 6 * 96  # final conv
    )
    positions = 8 + 71 * 8  # next position and the window's positions (int64)
    for dtype, size in ((torch.bfloat16, 2), (torch.float32, 4)):
        assert state_bytes_per_slot(CodecDecoderConfig(), dtype) == (kv + convs) * size + positions
    assert 2.5e6 < state_bytes_per_slot(dtype=torch.bfloat16) < 2.7e6  # design: about 2.6 MB per stream in bf16
    assert state_bytes_per_slot(dtype=torch.bfloat16) == 2_597_568
    assert state_bytes_per_slot(dtype=torch.float32) == 5_194_560


def test_module_tree_matches_released_key_names():
    with torch.device("meta"):
        keys = set(CodecDecoder(CodecDecoderConfig()).state_dict())
    for key in (
        "quantizer.rvq_first.vq.layers.0._codebook.embedding_sum",
        "quantizer.rvq_rest.vq.layers.14._codebook.cluster_usage",
        "quantizer.rvq_rest.input_proj.weight",
        "pre_conv.conv.weight",
        "pre_transformer.layers.7.self_attn_layer_scale.scale",
        "upsample.1.1.dwconv.conv.weight",
        "upsample.0.0.conv.bias",
        "decoder.4.block.4.conv1.conv.weight",
        "decoder.5.alpha",
        "decoder.6.conv.weight",
    ):
        assert key in keys
    assert not any("inv_freq" in k for k in keys)
