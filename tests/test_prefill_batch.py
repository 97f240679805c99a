"""Batched prefill (several slots' prompt chunks in one forward) equals prefilling each slot on its own."""

import torch

from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

TEXTS = ["Hi.", "A second, somewhat longer sentence to say.", "Third one here."]
OPTIONS = [
    SynthesisOptions(greedy=True, max_new_tokens=20),
    SynthesisOptions(seed=4, max_new_tokens=20),
    SynthesisOptions(seed=5, top_k=7, max_new_tokens=20),
]
SLOTS = [3, 0, 2]


def test_batched_chunked_prefill_equals_single_prefill(tiny_model_dir):
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    model = synth.model
    single, batched = (TalkerRunner(model.talker, model.config, 4, 96) for _ in range(2))
    prompts = [synth.builder.build(SpeechRequest(text=t, speaker="Ryan", language="English")) for t in TEXTS]
    params = [synth.sampling_params(o) for o in OPTIONS]
    assert len({len(p) for p in prompts}) == 3  # different lengths: rows are padded

    for slot, prompt, p in zip(SLOTS, prompts, params, strict=True):
        single.prefill(slot, prompt, p, chunk_size=7)

    embeddings = [batched.begin_prefill(s, prompt, p) for s, prompt, p in zip(SLOTS, prompts, params, strict=True)]
    done_order, start, rounds = [], 0, 0
    while start < max(len(p) for p in prompts):  # chunks of 7 positions, all unfinished prompts per forward
        chunks = [
            (s, e, start, min(start + 7, len(e))) for s, e in zip(SLOTS, embeddings, strict=True) if start < len(e)
        ]
        done_order += batched.prefill_batch(chunks)
        start, rounds = start + 7, rounds + 1
    assert rounds >= 3 and sorted(done_order) == sorted(SLOTS)

    rows = torch.tensor(SLOTS)
    for name in ("pending", "next_pos", "drawn", "seen", "finished"):
        assert torch.equal(getattr(batched, name)[rows], getattr(single, name)[rows]), name
    torch.testing.assert_close(batched.last_hidden[rows], single.last_hidden[rows], rtol=1e-5, atol=1e-5)
    for slot, prompt in zip(SLOTS, prompts, strict=True):  # the prompt's K/V; junk past it is never read
        n = len(prompt)
        torch.testing.assert_close(batched.cache.k[:, slot, :n], single.cache.k[:, slot, :n], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(batched.cache.v[:, slot, :n], single.cache.v[:, slot, :n], rtol=1e-5, atol=1e-5)
    for step in range(6):
        want, _ = single.decode_step(rows)
        got, _ = batched.decode_step(rows)
        assert torch.equal(got, want), f"step {step}"
