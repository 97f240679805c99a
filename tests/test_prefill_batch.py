"""Batched prefill (several slots' prompt chunks in one forward) equals prefilling each slot on its own."""

import pytest
import torch

from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, SpeechRequest

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


def test_batched_admission_resets_each_slot_and_embeds_by_the_definition(tiny_model_dir):
    """`begin_prefill_batch` (the engine's one-call admission) on slots that held other requests: every per-slot
    tensor as a fresh runner's single `begin_prefill` leaves it, and embeddings equal the per-position sum of the
    tracks' vectors, the x-vector and the ref-code frames."""
    synth = Synthesizer(tiny_model_dir("base"))
    model = synth.model
    hidden = model.config.talker.hidden_size
    gen = torch.Generator().manual_seed(3)
    requests = [
        SpeechRequest(
            text=text,
            ref_text="A reference.",
            ref_codes=torch.randint(0, 2048, (rows, 16), generator=gen),
            x_vector=torch.randn(hidden, generator=gen),
            x_vector_only=rows == 0,
        )
        for text, rows in [("Clone this voice.", 5), ("Only the x-vector.", 0), ("Another clone, longer.", 3)]
    ]
    prompts = [synth.builder.build(r) for r in requests]
    params = [synth.sampling_params(o) for o in OPTIONS]
    slots = [2, 0, 3]
    used, fresh = (TalkerRunner(model.talker, model.config, 4, 96) for _ in range(2))
    for slot in range(4):  # earlier requests left history, counters and trailing text in every slot
        used.prefill(slot, prompts[slot % 3], synth.sampling_params(SynthesisOptions(seed=9, max_new_tokens=20)))
    used.decode_step(torch.arange(4))

    embeddings = used.begin_prefill_batch(list(zip(slots, prompts, params, strict=True)))
    for slot, prompt, p in zip(slots, prompts, params, strict=True):
        fresh.begin_prefill(slot, prompt, p)
    rows = torch.tensor(slots)
    for name in ("seen", "drawn", "finished", "trailing", "trailing_len"):
        assert torch.equal(getattr(used, name)[rows], getattr(fresh, name)[rows]), name
    for name in ("seed", "do_sample", "temperature", "top_k", "top_p", "repetition_penalty", "max_new_tokens"):
        assert torch.equal(getattr(used.sampling, name)[rows], getattr(fresh.sampling, name)[rows]), name

    talker = model.talker
    for emb, prompt in zip(embeddings, prompts, strict=True):
        want = torch.zeros(len(prompt), hidden)
        for i, (text_id, codec_id) in enumerate(zip(prompt.text_ids.tolist(), prompt.codec_ids.tolist(), strict=True)):
            if text_id != NO_ID:
                want[i] += talker.embed_text(torch.tensor([text_id]))[0]
            if codec_id != NO_ID:
                want[i] += talker.embed_codec(torch.tensor([codec_id]))[0]
        if prompt.x_vector is not None:
            want[prompt.x_vector_pos] += prompt.x_vector
        if prompt.ref_codes is not None:
            n = prompt.ref_codes.shape[0]
            want[prompt.ref_codes_pos : prompt.ref_codes_pos + n] += talker.embed_frame(prompt.ref_codes)
        torch.testing.assert_close(emb, want, rtol=1e-5, atol=1e-5)
    assert any(p.ref_codes is not None for p in prompts) and sum(p.ref_codes is None for p in prompts) == 1

    with pytest.raises(ValueError, match="distinct slots"):
        used.begin_prefill_batch([(1, prompts[0], params[0]), (1, prompts[1], params[1])])
