"""The capturable (padded) talker decode step on CPU: it equals `decode_step` for the real rows of mixed batches.

CUDA graph capture itself needs a GPU: `tools/bench_talker_step.py` checks replay == eager there (docs/benchmarks.md).
"""

import asyncio

import numpy as np
import pytest
import torch

from omni.talker.cuda_graphs import TalkerGraphs
from omni.talker.engine import Finished, Request, TalkerEngine
from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

TEXTS = ["Hi.", "Two words here.", "A third, longer sentence for the talker.", "Four.", "Five and six."]
OPTIONS = [
    SynthesisOptions(greedy=True, max_new_tokens=40),
    SynthesisOptions(seed=7, max_new_tokens=40),
    SynthesisOptions(seed=8, max_new_tokens=5),  # finishes early: later batches shrink
    SynthesisOptions(seed=9, max_new_tokens=40, top_k=3, temperature=1.3),
    SynthesisOptions(greedy=True, max_new_tokens=9, repetition_penalty=1.5),
]


@pytest.fixture(scope="module")
def synth(tiny_model_dir):
    return Synthesizer(tiny_model_dir("custom_voice"))


def speech(text: str) -> SpeechRequest:
    return SpeechRequest(text=text, speaker="Ryan", language="English")


def runner_for(synth, scratch_slot: bool, slots: int = 6, max_len: int = 80) -> TalkerRunner:
    return TalkerRunner(synth.model.talker, synth.model.config, slots, max_len, scratch_slot=scratch_slot)


def bucket(n: int) -> int:
    return 1 << (n - 1).bit_length()


class EagerPaddedSteps:
    """The graphs' calling convention (pad to a power-of-two bucket with the scratch slot), run eagerly on CPU."""

    def __init__(self, runner: TalkerRunner):
        self.runner = runner
        self.batches: list[tuple[int, int]] = []  # (real rows, bucket) per step

    def decode_step(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = slots.shape[0]
        padded = torch.full((max(bucket(n), 2),), self.runner.scratch_slot, dtype=torch.int64)
        padded[:n] = slots
        self.batches.append((n, padded.shape[0]))
        codes, finished = self.runner.decode_step_padded(padded)
        return codes[:n], finished[:n]


def test_padded_step_equals_decode_step_for_mixed_batches(synth):
    plain, padded = runner_for(synth, scratch_slot=False), runner_for(synth, scratch_slot=True)
    scratch = padded.scratch_slot
    assert scratch == 6 and padded.cache.k.shape[1] == 7 and plain.cache.k.shape[1] == 6
    slot_of = [4, 0, 5, 2, 1]  # requests in scattered slots; slot 3 stays free
    for slot, text, options in zip(slot_of, TEXTS, OPTIONS, strict=True):
        prompt, params = synth.builder.build(speech(text)), synth.sampling_params(options)
        plain.prefill(slot, prompt, params)
        padded.prefill(slot, prompt, params)

    active = list(slot_of)
    steps = padding_rows = 0
    while active:
        # Mixed batches: all active slots, then every other one, in shuffled order.
        batch = active if steps % 2 == 0 else active[::-2]
        slots = torch.tensor(batch)
        rows = torch.full((bucket(len(batch) + 1),), scratch)  # at least one padding row every step
        rows[: len(batch)] = slots
        want_codes, want_finished = plain.decode_step(slots)
        got_codes, got_finished = padded.decode_step_padded(rows)
        assert torch.equal(got_codes[: len(batch)], want_codes), f"step {steps}"
        assert torch.equal(got_finished[: len(batch)], want_finished), f"step {steps}"
        # The scratch slot is back at its first frame, whatever the padding rows did.
        assert padded.next_pos[scratch] == 0 and padded.drawn[scratch] == 1 and not padded.seen[scratch].any()
        padding_rows += len(rows) - len(batch)
        done = {s for s, f in zip(batch, want_finished.tolist(), strict=True) if f}
        active = [s for s in active if s not in done]
        steps += 1
    assert steps >= 20 and padding_rows > steps

    real = torch.tensor(sorted(slot_of))
    for name in ("pending", "next_pos", "drawn", "seen", "finished", "trailing", "trailing_len"):
        assert torch.equal(getattr(padded, name)[real], getattr(plain, name)[real]), name
    torch.testing.assert_close(padded.last_hidden[real], plain.last_hidden[real], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(padded.cache.k[:, real], plain.cache.k[:, real], rtol=1e-5, atol=1e-5)
    # The free slot was never written through the padding rows.
    assert not padded.cache.k[:, 3].any() and not padded.cache.v[:, 3].any()


def test_scratch_slot_stays_in_bounds_over_more_steps_than_its_length(synth):
    runner = runner_for(synth, scratch_slot=True, slots=2, max_len=8)
    only_scratch = torch.full((3,), runner.scratch_slot)
    for _ in range(12):  # without the reset the scratch position would pass max_len = 8 and index out of range
        codes, _ = runner.decode_step_padded(only_scratch)
    assert codes.shape == (3, 16) and runner.next_pos[runner.scratch_slot] == 0


def test_engine_with_padded_steps_equals_engine_without(synth):
    async def run(with_padding: bool) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        runner = runner_for(synth, scratch_slot=with_padding, slots=4, max_len=80)
        steps = EagerPaddedSteps(runner) if with_padding else None
        engine = TalkerEngine(runner, max_queue=8, prefill_budget=64, graphs=steps)
        engine.start()
        try:
            requests = [
                engine.submit(Request(str(i), synth.builder.build(speech(t)), synth.sampling_params(o)))
                for i, (t, o) in enumerate(zip(TEXTS, OPTIONS, strict=True))
            ]
            outputs = []
            for r in requests:
                frames = []
                while not isinstance(item := await r.outputs.get(), Finished):
                    frames.append(item.codes)
                outputs.append(np.concatenate(frames))
            assert not engine.slots and sorted(engine.free) == list(range(4))
            return outputs, steps.batches if steps else []
        finally:
            await engine.stop()

    want, _ = asyncio.run(run(False))
    got, batches = asyncio.run(run(True))
    assert len(want) == len(TEXTS) and all(len(w) > 0 for w in want)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)
    assert any(n < b for n, b in batches) and len({n for n, _ in batches}) > 1  # padded, mixed batch sizes


def test_bad_setups_fail_clearly(synth):
    plain = runner_for(synth, scratch_slot=False)
    with pytest.raises(ValueError, match="scratch_slot=True"):
        plain.decode_step_padded(torch.tensor([0]))
    with pytest.raises(ValueError, match="CUDA"):
        TalkerGraphs(runner_for(synth, scratch_slot=True))


def test_attention_backend_setting_allows_only_the_named_kernel():
    from omni.services.talker.config import TalkerConfig

    from omni.talker.attention_backend import use_attention_backend

    assert TalkerConfig().prefill_attention == "auto" and TalkerConfig().prefill_graphs
    with pytest.raises(ValueError, match="prefill_attention"):
        TalkerConfig(prefill_attention="efficient").validate()
    cuda = torch.backends.cuda
    enabled = {
        "flash": cuda.flash_sdp_enabled,
        "efficient": cuda.mem_efficient_sdp_enabled,
        "math": cuda.math_sdp_enabled,
        "cudnn": cuda.cudnn_sdp_enabled,
    }
    try:
        use_attention_backend("math")
        assert {name: on() for name, on in enabled.items()} == {
            "flash": False,
            "efficient": False,
            "math": True,
            "cudnn": False,
        }
        use_attention_backend("default")
        assert all(on() for on in enabled.values())
        with pytest.raises(ValueError, match="attention backend"):
            use_attention_backend("flash")
    finally:
        use_attention_backend("default")


def test_config_rejects_empty_or_nonpositive_buckets():
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig

    assert TalkerConfig().cuda_graphs and TalkerConfig().graph_batch_buckets[-1] == 640
    for buckets in ([], [0, 4]):
        with pytest.raises(ValueError, match="graph_batch_buckets"):
            TalkerConfig(graph_batch_buckets=buckets).validate()
        with pytest.raises(ValueError, match="prefill_batch_buckets"):
            TalkerConfig(prefill_batch_buckets=buckets).validate()
    # From the environment, as the chart and bench_stack set it.
    config = load_config(TalkerConfig, "talker", env={"OMNI_TALKER_PREFILL_BATCH_BUCKETS": "1,4,16,64"})
    assert config.prefill_batch_buckets == [1, 4, 16, 64] and TalkerConfig().prefill_batch_buckets[-1] == 16
    # Prefill graph widths reach the most positions a step may prefill: the step token budget, or prefill_budget.
    assert TalkerConfig().prefill_widths() == [32, 64, 128, 256, 512, 1024]
    assert TalkerConfig(step_token_budget=0).prefill_widths() == [32, 64, 128, 256, 512]
    assert TalkerConfig(prefill_budget=96, step_token_budget=0).prefill_widths() == [32, 64, 96]
