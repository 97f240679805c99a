"""Batched reference encoding is exact: a request's codes and x-vector are byte-identical whether it is encoded
alone or in a batch of different-length requests, and they match the per-clip (reference-parity) encoders."""

import asyncio
from pathlib import Path

import numpy as np
import pytest
import torch
from omni.services.common.metrics import MetricsServer
from omni.services.refenc.engine import EncodeBatcher, ReferenceModel

from omni.models.qwen3_tts.speaker_encoder import extract_xvector, xvector_bucket

# Sample counts: none a multiple of 1920 (Mimi's frame), so each clip's last frame is partial; the first three
# share the 128-mel-frame bucket, the last two the 192-frame one.
LENGTHS = (28_001, 30_011, 32_000, 40_001, 45_678)


@pytest.fixture(scope="module")
def model(tiny_model_dir) -> ReferenceModel:
    return ReferenceModel.load(Path(tiny_model_dir("base")))


def _clip(n: int, seed: int) -> np.ndarray:
    """A gliding tone with noise: every clip's x-vector and codes differ."""
    t = np.arange(n) / 24000
    rng = np.random.default_rng(seed)
    wav = 0.3 * np.sin(2 * np.pi * (120 + 40 * seed) * t * (1 + t)) + 0.05 * rng.standard_normal(n)
    return wav.astype(np.float32)


CLIPS = [_clip(n, i) for i, n in enumerate(LENGTHS)]


def test_buckets() -> None:
    assert [xvector_bucket(n) for n in LENGTHS] == [128, 128, 128, 192, 192]


def test_batch_is_byte_identical_to_each_clip_alone(model: ReferenceModel) -> None:
    alone = [model.encode_batch([clip])[0] for clip in CLIPS]
    for members in ((0, 1, 2), (3, 4), (4, 3), tuple(range(len(CLIPS)))):  # buckets, reversed order, all mixed
        batch = model.encode_batch([CLIPS[i] for i in members])
        for i, got in zip(members, batch, strict=True):
            assert got.codes.tobytes() == alone[i].codes.tobytes(), f"codes of clip {i} in batch {members}"
            assert got.xvector.tobytes() == alone[i].xvector.tobytes(), f"x-vector of clip {i} in batch {members}"
    for clip, enc in zip(CLIPS, alone, strict=True):
        # The per-clip encoders are the ones checked against the official qwen-tts (test_codec_encoder.py,
        # test_speaker_encoder.py): same codes, x-vector up to float rounding.
        assert enc.codes.shape == (-(-len(clip) // 1920), 16)
        np.testing.assert_array_equal(enc.codes, model.codec_encoder.encode(clip).numpy())
        want = extract_xvector(model.speaker_encoder, clip).numpy()
        np.testing.assert_allclose(enc.xvector, want, rtol=0, atol=1e-6)
    assert len({enc.xvector.tobytes() for enc in alone}) == len(CLIPS)


def test_codec_batch_without_end_padding_fix_would_differ(model: ReferenceModel, monkeypatch) -> None:
    """The strided convs' end padding is what makes Mimi batching exact: without rewriting it, a short clip in a
    batch with a longer one reads the longer clip's padding and its last frame changes."""
    import omni.models.qwen3_tts.codec_encoder as codec_encoder

    monkeypatch.setattr(codec_encoder, "_pad_past_lengths", lambda x, lengths, mode: x)
    batch = model.codec_encoder.encode_batch(CLIPS)
    alone = [model.codec_encoder.encode(clip) for clip in CLIPS]
    assert not all(torch.equal(b, a) for b, a in zip(batch, alone, strict=True))


def test_batcher_runs_one_call_per_bucket(model: ReferenceModel) -> None:
    metrics = MetricsServer("omni_refenc")

    async def scenario():
        batcher = EncodeBatcher(model, max_batch=8, max_wait_ms=200, metrics=metrics)
        batcher.start()
        try:
            return await asyncio.gather(*(batcher.encode(clip) for clip in CLIPS))
        finally:
            await batcher.stop()

    results = asyncio.run(scenario())
    for clip, got in zip(CLIPS, results, strict=True):
        want = model.encode_batch([clip])[0]
        assert got.codes.tobytes() == want.codes.tobytes() and got.xvector.tobytes() == want.xvector.tobytes()
    sample = metrics.registry.get_sample_value
    assert sample("omni_refenc_encode_batch_size_count") == 2  # two buckets, one model call each
    assert sample("omni_refenc_encode_batch_size_sum") == len(CLIPS)


def test_bad_clip_in_a_batch_is_a_clear_error(model: ReferenceModel) -> None:
    nan_clip = CLIPS[0].copy()
    nan_clip[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.codec_encoder.encode_batch([CLIPS[1], nan_clip])
    with pytest.raises(ValueError, match="mono"):
        model.codec_encoder.encode_batch([CLIPS[1], np.zeros((2, 100), np.float32)])
    with pytest.raises(ValueError, match="too short"):
        model.encode_batch([CLIPS[1], CLIPS[0][:300]])
