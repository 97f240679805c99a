"""What a talker decode step makes once instead of in every code predictor pass, against made by every pass.

- `TalkerRunner(predictor_tables=True)`: each pass's attention inputs (RoPE's cos and sin, the lengths or mask) made
  at start-up for every row, a pass reading its first B rows;
- the frame's codebook embeddings, which the passes make as their inputs, summed as they are made for the talker's
  next input (`Qwen3TTSTalker.embed_frame`'s sum, the same adds in the same order).

On CPU, eager and through the Triton interpreter for the fused build; tools/bench_talker_step.py's +rope-per-forward
times the tables and checks them against per-pass ones on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch

from tests.kernel_runners import (
    PREFILLED_SLOTS,
    SERVICE_KERNELS,
    assert_same_steps_bit_for_bit,
    prefilled_runner_pair,
)


@pytest.mark.parametrize("fused", [False, True])
def test_runner_with_the_predictor_tables_steps_as_without(tiny_model_dir, fused):
    """The same codes, caches and hidden state to the bit as attention inputs made by every pass, eager modules and
    fused kernels alike; the tables hold every row (slots + scratch), one per pass."""
    common = SERVICE_KERNELS if fused else {}
    without, with_tables = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=fused, common=common, predictor_tables=True
    )
    assert without._predictor_inputs is None and len(with_tables._predictor_inputs) == with_tables.groups - 1
    rows = with_tables.predictor_cache.k.shape[1]
    for g, ((cos, sin), visible) in enumerate(with_tables._predictor_inputs, start=1):
        t = 2 if g == 1 else 1
        assert cos.shape == sin.shape == (rows, t, 1, cos.shape[-1]) and cos.dtype == with_tables.dtype
        assert visible.shape[0] == rows
    assert_same_steps_bit_for_bit(without, with_tables, steps=3)


@pytest.mark.parametrize("fused", [False, True])
def test_talker_input_is_the_frames_embedding_sum(tiny_model_dir, fused):
    """The talker's input in a decode step equals embed_frame(the completed frame's codes) plus the text vector, to
    the bit: the runner sums the embeddings its code predictor passes made."""
    common = SERVICE_KERNELS if fused else {}
    _, runner = prefilled_runner_pair(tiny_model_dir("custom_voice"), fused=fused, common=common, predictor_tables=True)
    talker = runner.talker
    seen = []
    hook = talker.model.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    slots = torch.tensor(PREFILLED_SLOTS)
    try:
        for _ in range(3):
            frame = runner.drawn[slots] - 1
            trailing = runner.trailing[slots, frame]
            text_ids = torch.where(frame < runner.trailing_len[slots], trailing, runner.tts_pad_id)
            codes, _ = runner.decode_step(slots)
            want = (talker.embed_frame(codes) + talker.embed_text(text_ids))[:, None]
            assert torch.equal(seen[-1], want)
    finally:
        hook.remove()
    assert len(seen) == 3
