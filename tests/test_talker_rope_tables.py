"""The code predictor's RoPE tables made once by the runner (`predictor_rope_table`) against made by every pass.

On CPU through the Triton interpreter for the fused build; tools/bench_talker_step.py's +rope-per-forward times and
checks the same on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest

from tests.kernel_runners import assert_same_steps_bit_for_bit, prefilled_runner_pair

# The service's CUDA build: every talker kernel it turns on, the table the only difference between the two runners.
SERVICE_KERNELS = {"sampler_kernel": True, "kv_write_kernel": True, "norm_rope_write_kernel": True}


@pytest.mark.parametrize("fused", [False, True])
def test_runner_with_the_predictor_rope_table_steps_as_without(tiny_model_dir, fused):
    """The predictor's single-position passes read views of tables made once for positions 0..15 (a row stride of 0
    across the batch): the same codes, caches and hidden state to the bit as tables made by every pass, eager
    modules and fused kernels alike."""
    common = SERVICE_KERNELS if fused else {}
    without, with_table = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=fused, common=common, predictor_rope_table=True
    )
    assert without._predictor_rope is None and with_table._predictor_rope is not None
    cos, sin = with_table._predictor_rope
    assert cos.shape == sin.shape == (1, with_table.groups, 1, cos.shape[-1]) and cos.dtype == with_table.dtype
    assert_same_steps_bit_for_bit(without, with_table, steps=3)
