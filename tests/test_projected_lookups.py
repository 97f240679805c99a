"""The code predictor's passes 2..15 reading their inputs from codebook tables already projected to its width
(`TalkerRunner(projected_lookups=True)`, `CodePredictor.projected_embeddings`), against the projection GEMM run on
each looked-up embedding.

The tables hold proj(E_q(id)) for every id, so a pass's input is the same vector up to the order of the fp32 sums: in
fp32 on CPU the runners step to the same codes with caches and hidden state within rounding. tests/
test_generate_parity.py checks the runner with the tables against the official generate; tools/bench_talker_step.py's
+projected-lookups times it and counts the codes that stay equal in bf16 on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: kernels run on CPU tensors

import pytest
import torch
import torch.nn.functional as F
from omni.services.talker.config import TalkerConfig

from omni.models.qwen3_tts.config import CodePredictorConfig
from omni.models.qwen3_tts.talker import CodePredictor
from omni.talker.generate import Synthesizer
from omni.talker.model_runner import TalkerRunner
from tests.kernel_runners import (
    PREFILLED_SLOTS,
    SERVICE_KERNELS,
    assert_same_steps_bit_for_bit,
    prefilled_runner_pair,
)


def test_each_table_row_is_the_projection_of_that_embedding_row(tiny_model_dir):
    """One table per codebook 1..14 (codebook 15 feeds only the talker), [vocab, predictor width], row `id` the
    projection (weight and bias) of E_q's row `id`."""
    predictor = Synthesizer(tiny_model_dir("custom_voice")).model.talker.code_predictor
    tables = predictor.projected_embeddings()
    assert len(tables) == predictor.cfg.num_code_groups - 2
    ids = torch.tensor([0, 7, predictor.cfg.vocab_size - 1])
    for q, table in enumerate(tables):
        embedding = predictor.codec_embedding[q]
        assert table.weight.shape == (embedding.num_embeddings, predictor.cfg.hidden_size)
        assert not table.weight.requires_grad
        torch.testing.assert_close(table(ids), predictor.proj(embedding(ids)), rtol=1e-6, atol=1e-6)


def test_a_bf16_table_is_the_fp32_projection_rounded_once(tiny_model_dir):
    """In bf16 each element is rounded once, from the fp32 sum, as a GEMM accumulating in fp32 rounds its output."""
    predictor = Synthesizer(tiny_model_dir("custom_voice")).model.talker.code_predictor.to(torch.bfloat16)
    linear = predictor.small_to_mtp_projection
    table = predictor.projected_embeddings()[3]
    want = F.linear(predictor.codec_embedding[3].weight.float(), linear.weight.float(), linear.bias.float())
    assert table.weight.dtype == torch.bfloat16 and torch.equal(table.weight, want.bfloat16())


def test_equal_widths_have_no_tables():
    """Where the talker and the predictor are equally wide there is no projection to skip (the released 0.6B)."""
    cfg = CodePredictorConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                              num_key_value_heads=1, head_dim=16, vocab_size=64, rope_theta=1e6, rms_norm_eps=1e-6,
                              max_position_embeddings=64, num_code_groups=4)  # fmt: skip
    assert CodePredictor(cfg, talker_hidden=32).projected_embeddings() is None
    assert len(CodePredictor(cfg, talker_hidden=40).projected_embeddings()) == 2


@pytest.mark.parametrize("fused", [False, True])
def test_runner_with_projected_lookups_steps_as_without(tiny_model_dir, fused):
    """fp32: the same codes every step, caches and hidden state equal within rounding (not to the bit: the tables'
    sums run in another order than the projection's). The runner without the flag keeps no tables."""
    common = SERVICE_KERNELS if fused else {}
    without, projected = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=fused, common=common, projected_lookups=True
    )
    assert without.projected is None and len(projected.projected) == projected.groups - 2
    slots = torch.tensor(PREFILLED_SLOTS)
    for step in range(4):
        assert torch.equal(projected.decode_step(slots)[0], without.decode_step(slots)[0]), f"step {step}"
    for name in ("cache", "predictor_cache"):
        torch.testing.assert_close(getattr(projected, name).k, getattr(without, name).k, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(getattr(projected, name).v, getattr(without, name).v, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(projected.last_hidden, without.last_hidden, rtol=1e-5, atol=1e-5)
    # Something did change: the predictor caches hold the passes' K/V, made from the looked-up inputs.
    assert not torch.equal(projected.predictor_cache.k, without.predictor_cache.k)


@pytest.mark.parametrize("projected", [False, True])
@pytest.mark.parametrize("by_group", [True, False])
def test_lookup_kernels_step_as_the_pytorch_lookups_and_adds_bit_for_bit(tiny_model_dir, projected, by_group):
    """kernels/frame_embedding.py in the step (lookup_kernels): the frame's sum in one kernel after the passes, and
    with projected_lookups each pass's input gathered by one: the same codes, caches and hidden state to the bit,
    with the codes group-major (the default) or row-major (each codebook's ids strided)."""
    common = {**SERVICE_KERNELS, "projected_lookups": projected}
    without, with_kernels = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=True, common=common, lookup_kernels=True
    )
    without.codes_by_group = with_kernels.codes_by_group = by_group
    assert without.frame_tables is None and with_kernels.frame_tables.shape[0] == with_kernels.groups - 1
    assert_same_steps_bit_for_bit(without, with_kernels, steps=4)


@pytest.mark.parametrize("lookup_kernels", [False, True])
@pytest.mark.parametrize("by_group", [True, False])
def test_the_step_input_kernel_steps_as_the_pytorch_gathers_bit_for_bit(tiny_model_dir, lookup_kernels, by_group):
    """kernels/frame_embedding.py's step_inputs in the step (step_input_kernel): the rows' drawn counts, frame,
    codebook 0's id and embedding, last hidden state, position and trailing text row in one kernel. The same codes,
    caches and hidden state to the bit, over a trailing text and past it (7 steps), with the frame summed by
    PyTorch's adds or by the frame_sum kernel (which then starts from the kernel's codebook-0 rows, a strided view)."""
    common = {**SERVICE_KERNELS, "projected_lookups": True, "lookup_kernels": lookup_kernels}
    without, with_kernel = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=True, common=common, step_input_kernel=True
    )
    without.codes_by_group = with_kernel.codes_by_group = by_group
    assert without.step_inputs is None and with_kernel.step_inputs is not None
    # These prompts hold all their text; give one slot 5 trailing text ids (both runners alike), so the steps read
    # the trailing text and then the pad id past it.
    ids = torch.randint(0, without.talker.model.text_embedding.num_embeddings, (5,), generator=torch.Generator())
    for runner in (without, with_kernel):
        runner.trailing[PREFILLED_SLOTS[0], :5] = ids
        runner.trailing_len[PREFILLED_SLOTS[0]] = 5
    assert_same_steps_bit_for_bit(without, with_kernel, steps=7)


@pytest.mark.parametrize("by_group", [True, False])
def test_the_step_rope_tables_step_as_the_forwards_own_bit_for_bit(tiny_model_dir, by_group):
    """step_rope_tables: the talker forward's RoPE rows and key counts from the step input kernel (tables made once
    by position) instead of made by the forward: the same codes, caches and hidden state to the bit. It needs the
    step input kernel and the decode-attention kernel (the key counts are that kernel's)."""
    common = {**SERVICE_KERNELS, "projected_lookups": True, "lookup_kernels": True, "step_input_kernel": True,
              "decode_kernel": True}  # fmt: skip
    without, with_tables = prefilled_runner_pair(
        tiny_model_dir("custom_voice"), fused=True, common=common, step_rope_tables=True
    )
    without.codes_by_group = with_tables.codes_by_group = by_group
    assert without.rope_tables is None and with_tables.rope_tables[0].shape == (64, without.config.talker.head_dim)
    assert_same_steps_bit_for_bit(without, with_tables, steps=5)
    talker, config = without.talker, without.config
    with pytest.raises(ValueError, match="needs step_input_kernel"):
        TalkerRunner(talker, config, 2, 16, decode_kernel=True, step_rope_tables=True)
    with pytest.raises(ValueError, match="needs step_input_kernel"):
        TalkerRunner(talker, config, 2, 16, decode_kernel=False, step_input_kernel=True, step_rope_tables=True)
    # The talker setting (on by default since run 196) reaches the runner only with the step input kernel and the
    # fused kernels on CUDA: turning the step input kernel off turns it off too, with no error.
    from omni.services.talker.service import apply_kernels

    from omni.models.qwen3_tts.talker import Qwen3TTSTalker

    built = {}
    for settings in (TalkerConfig(), TalkerConfig(step_input_kernel=False), TalkerConfig(fused_kernels=False)):
        settings.validate()
        kernels = apply_kernels(Qwen3TTSTalker(config.talker).eval(), settings, on_cuda=True)
        built[(settings.step_input_kernel, settings.fused_kernels)] = kernels["step_rope_tables"]
    assert built == {(True, True): True, (False, True): False, (True, False): False}


def test_the_stacked_embeddings_are_the_tables_themselves(tiny_model_dir):
    """Codebooks 1..15's weights become views of one [15, V, D] tensor (no copy kept), the same one when asked again;
    after a cast the weights are new tensors, and they are stacked again."""
    predictor = Synthesizer(tiny_model_dir("custom_voice")).model.talker.code_predictor
    before = [e.weight.detach().clone() for e in predictor.codec_embedding]
    stacked = predictor.stacked_codec_embeddings()
    assert stacked.shape == (15, *before[0].shape) and stacked.is_contiguous()
    for q, e in enumerate(predictor.codec_embedding):
        assert e.weight.data_ptr() == stacked[q].data_ptr() and torch.equal(e.weight, before[q])
    assert predictor.stacked_codec_embeddings() is stacked
    predictor.to(torch.bfloat16)
    again = predictor.stacked_codec_embeddings()
    assert again is not stacked and again.dtype == torch.bfloat16
    assert again[4].data_ptr() == predictor.codec_embedding[4].weight.data_ptr()
