"""The codec engine's batched PCM packing writes exactly what the per-stream `encode_pcm` writes."""

import pytest
import torch
from omni.services.codec.engine import pack_step_pcm
from omni.services.common.packing import encode_pcm

from omni.models.qwen3_tts.codec_graphs import StepWaves
from omni.proto import common_pb2

S16, F32 = common_pb2.SAMPLE_FORMAT_PCM_S16LE, common_pb2.SAMPLE_FORMAT_PCM_F32LE


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_pack_step_pcm_equals_encode_pcm(dtype):
    gen = torch.Generator().manual_seed(0)
    waves = [torch.randn(n, generator=gen, dtype=torch.float32).mul(0.9).to(dtype) for n in (1920, 0, 3840, 1920)]
    # Clipping and exact halves (round half to even) must agree too.
    waves[0][:4] = torch.tensor([1.5, -1.5, 0.5 / 32767, 2.5 / 32767], dtype=dtype)
    formats = [S16, F32, S16, F32]
    got = pack_step_pcm(StepWaves.of_rows(waves), formats)
    want = [encode_pcm(w.float().numpy(), f) for w, f in zip(waves, formats, strict=True)]
    assert got == want
    assert [len(b) for b in got] == [1920 * 2, 0, 3840 * 2, 1920 * 4]


@pytest.mark.parametrize("fmt", [S16, F32])
def test_pack_step_pcm_one_format(fmt):
    waves = [torch.linspace(-1.2, 1.2, 1920), torch.linspace(1, -1, 3840)]
    assert pack_step_pcm(StepWaves.of_rows(waves), [fmt, fmt]) == [encode_pcm(w.numpy(), fmt) for w in waves]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_pack_step_pcm_cuts_each_row_out_of_whole_replay_outputs(dtype):
    # Two replays' outputs, rows padded to each block's width; the input rows point into them in any order, and each
    # comes back cut to its own length.
    gen = torch.Generator().manual_seed(1)
    blocks = [torch.randn(rows, width, generator=gen).mul(0.9).to(dtype) for rows, width in ((3, 3840), (2, 1920))]
    where = [(1, 1, 1920), (0, 2, 3840), (0, 0, 1920), (1, 0, 0), (0, 1, 3840)]
    formats = [S16, F32, F32, S16, S16]
    got = pack_step_pcm(StepWaves(blocks, where), formats)
    want = [encode_pcm(blocks[b][r, :n].float().numpy(), f) for (b, r, n), f in zip(where, formats, strict=True)]
    assert got == want
