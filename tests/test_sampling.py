"""The batched sampler: each processor against transformers' own (the classes the official generate uses),
their order, greedy semantics, top-k/top-p edge cases, the counter-based RNG, and seeded runs through the
slot runner that do not depend on what else is in the batch."""

import dataclasses

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinNewTokensLengthLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    SuppressTokensLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from omni.talker.generate import SynthesisOptions, Synthesizer, generate_codes
from omni.talker.prompt import SpeechRequest
from omni.talker.sampling import (
    UNIFORM_BITS,
    SamplingParams,
    apply_repetition_penalty,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    block_eos,
    draw,
    suppress,
    talker_scores,
    uniform,
    unit_interval,
    warp,
)

V = 64
EOS = 50


def logits_batch(rows: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, V, generator=torch.Generator().manual_seed(seed)) * 3


def history(rows: int, length: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (rows, length), generator=torch.Generator().manual_seed(seed))


def seen_mask(ids: torch.Tensor) -> torch.Tensor:
    mask = torch.zeros(ids.shape[0], V, dtype=torch.bool)
    mask.scatter_(1, ids, True)
    return mask


def per_row(processor_for_row, x: torch.Tensor, ids: torch.Tensor | None = None) -> torch.Tensor:
    """transformers' processors take one scalar setting: apply the row's own processor to each row."""
    empty = torch.zeros(1, 0, dtype=torch.long)
    return torch.cat(
        [
            processor_for_row(b)(ids[b : b + 1] if ids is not None else empty, x[b : b + 1].clone())
            for b in range(len(x))
        ]
    )


# ---- each processor equals transformers' ----


def test_repetition_penalty_matches_transformers_per_row():
    x, ids = logits_batch(), history(4, 6)
    penalty = torch.tensor([1.05, 1.0, 1.5, 2.0])
    ours = apply_repetition_penalty(x, seen_mask(ids), penalty)
    theirs = per_row(lambda b: RepetitionPenaltyLogitsProcessor(float(penalty[b])), x, ids)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert not torch.equal(ours[2], x[2])  # the penalty did something


def test_min_new_tokens_blocks_eos_only_while_too_few_were_generated():
    x = logits_batch()
    generated = torch.tensor([0, 1, 2, 5])
    ours = block_eos(x, EOS, generated, torch.full((4,), 2))
    for b in range(4):
        ids = torch.zeros(1, int(generated[b]), dtype=torch.long)
        theirs = MinNewTokensLengthLogitsProcessor(0, 2, EOS)(ids, x[b : b + 1].clone())
        torch.testing.assert_close(ours[b : b + 1], theirs, rtol=0, atol=0)
    assert torch.isinf(ours[:2, EOS]).all() and torch.isfinite(ours[2:, EOS]).all()


def test_suppressed_ids_match_transformers():
    ids = [3, 7, 60]
    mask = torch.zeros(V, dtype=torch.bool)
    mask[ids] = True
    x = logits_batch()
    theirs = SuppressTokensLogitsProcessor(ids)(torch.zeros(4, 0, dtype=torch.long), x.clone())
    torch.testing.assert_close(suppress(x, mask), theirs, rtol=0, atol=0)


def test_temperature_matches_transformers():
    x, t = logits_batch(), torch.tensor([0.9, 1.0, 0.3, 2.5])
    theirs = per_row(lambda b: TemperatureLogitsWarper(float(t[b])), x)
    torch.testing.assert_close(apply_temperature(x, t), theirs)


@pytest.mark.parametrize("ks", [[1, 5, 50, 0], [V, V + 10, 2, 63]])
def test_top_k_matches_transformers_including_off_and_oversized_k(ks):
    x = logits_batch()
    x[1, :10] = 2.0  # ties at the boundary are kept, as transformers keeps them
    ours = apply_top_k(x, torch.tensor(ks))
    theirs = per_row(lambda b: TopKLogitsWarper(ks[b]) if ks[b] > 0 else (lambda _i, s: s), x)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("ps", [[0.01, 0.5, 0.9, 1.0], [0.999, 0.3, 1e-6, 0.75]])
def test_top_p_matches_transformers_and_keeps_the_best_token(ps):
    x = logits_batch()
    x[0, 5:] = -float("inf")  # already-removed ids stay removed
    ours = apply_top_p(x, torch.tensor(ps))
    theirs = per_row(lambda b: TopPLogitsWarper(ps[b]) if ps[b] < 1 else (lambda _i, s: s), x)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert torch.isfinite(ours.max(dim=-1).values).all()
    assert (ours.argmax(-1) == x.argmax(-1)).all()


def test_talker_processors_and_warpers_run_in_the_official_order():
    """repetition penalty -> min new tokens -> suppressed ids -> temperature -> top-k -> top-p, as transformers."""
    rows = 3
    x, ids = logits_batch(rows, seed=3), history(rows, 4, seed=4)
    suppressed = [40, 41, 42, 63]
    mask = torch.zeros(V, dtype=torch.bool)
    mask[suppressed] = True
    ours = warp(
        talker_scores(
            x, torch.full((rows,), 1.3), seen_mask(ids), torch.full((rows,), 4), torch.full((rows,), 2), mask, EOS
        ),
        torch.full((rows,), 0.7),
        torch.full((rows,), 10),
        torch.full((rows,), 0.8),
    )
    chain = LogitsProcessorList(
        [
            RepetitionPenaltyLogitsProcessor(1.3),
            MinNewTokensLengthLogitsProcessor(0, 2, EOS),
            SuppressTokensLogitsProcessor(suppressed),
            TemperatureLogitsWarper(0.7),
            TopKLogitsWarper(10),
            TopPLogitsWarper(0.8),
        ]
    )
    torch.testing.assert_close(ours, chain(ids, x.clone()))


# ---- greedy, sampling and the RNG ----


def test_greedy_rows_take_the_argmax_of_the_processed_logits_whatever_the_warpers():
    x = logits_batch()
    seed, counter = torch.arange(4), torch.zeros(4, dtype=torch.long)
    ids = draw(
        x,
        torch.zeros(4, dtype=torch.bool),
        torch.full((4,), 5.0),
        torch.full((4,), 3),
        torch.full((4,), 0.1),
        seed,
        counter,
    )
    assert torch.equal(ids, x.argmax(-1))


def test_mixed_batch_samples_only_where_asked_and_respects_top_k():
    x = torch.zeros(2, V)  # flat: sampling picks anything allowed, greedy picks id 0
    do_sample = torch.tensor([True, False])
    top_k = torch.tensor([V, V])
    seen = set()
    for step in range(200):
        ids = draw(x, do_sample, torch.ones(2), top_k, torch.ones(2), torch.tensor([7, 7]), torch.tensor([step, step]))
        assert ids[1] == 0
        seen.add(int(ids[0]))
    assert len(seen) > V // 2
    x = logits_batch(1)
    allowed = set(x[0].topk(5).indices.tolist())
    for step in range(100):
        i = draw(
            x,
            torch.tensor([True]),
            torch.ones(1),
            torch.tensor([5]),
            torch.ones(1),
            torch.tensor([1]),
            torch.tensor([step]),
        )
        assert int(i) in allowed


def test_sampling_frequencies_follow_the_softmax():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, -float("inf")]])
    n = 20000
    counts = np.zeros(5)
    x = logits.expand(n, -1)
    ones = torch.ones(n)
    ids = draw(
        x,
        torch.ones(n, dtype=torch.bool),
        ones,
        torch.zeros(n, dtype=torch.long),
        ones,
        torch.full((n,), 11),
        torch.arange(n),
    )
    np.add.at(counts, ids.numpy(), 1)
    expected = torch.softmax(logits[0], -1).numpy()
    assert counts[4] == 0
    assert np.abs(counts / n - expected).max() < 0.015


def test_uniform_is_a_pure_function_of_seed_counter_and_column():
    seed = torch.tensor([1, 2, 1, -5, (1 << 63) - 1])
    counter = torch.tensor([0, 0, 3, 9, 1 << 40])
    u = uniform(seed, counter, 1000)
    assert ((u > 0) & (u < 1)).all()
    assert abs(float(u.mean()) - 0.5) < 0.02
    torch.testing.assert_close(uniform(seed[2:3], counter[2:3], 1000), u[2:3], rtol=0, atol=0)  # alone == in batch
    assert not torch.equal(u[0], u[1]) and not torch.equal(u[0], u[2])  # seed and counter both matter


def test_unit_interval_excludes_both_ends_so_gumbel_noise_is_finite():
    top = (1 << UNIFORM_BITS) - 1
    u = unit_interval(torch.tensor([0, 1, top - 1, top]))
    assert ((u > 0) & (u < 1)).all() and len(set(u.tolist())) == 4
    assert torch.isfinite(-torch.log(-torch.log(u))).all()


def test_a_suppressed_id_is_never_drawn_even_with_extreme_noise():
    # The largest uniform value must not turn a -inf logit into NaN (argmax would pick it).
    logits = torch.tensor([[0.0, 1.0, -float("inf"), 0.5]])
    gumbel = -torch.log(-torch.log(unit_interval(torch.tensor([[0, 0, (1 << UNIFORM_BITS) - 1, 0]]))))
    assert int((logits + gumbel).argmax(-1)) != 2


def test_sampling_params_validate_and_accept_unsigned_64_bit_seeds():
    SamplingParams(seed=(1 << 64) - 1).validate()
    for bad in (
        dict(temperature=0.0),
        dict(top_p=0.0),
        dict(top_p=1.5),
        dict(top_k=-1),
        dict(repetition_penalty=0.0),
        dict(max_new_tokens=1),
        dict(min_new_tokens=0),
        dict(seed=1 << 64),
    ):
        with pytest.raises(ValueError):
            SamplingParams(**bad).validate()


# ---- seeded sampling through the runner ----

FRAMES = 12


@pytest.fixture(scope="module")
def synth(tiny_model_dir):
    return Synthesizer(tiny_model_dir("custom_voice"))


def sampled(synth: Synthesizer, seed: int, text: str = "Hello there, general.", **kw) -> tuple:
    request = SpeechRequest(text=text, speaker="Vivian", language="English", **kw)
    params = synth.sampling_params(SynthesisOptions(seed=seed, max_new_tokens=FRAMES + 1))
    return synth.builder.build(request), params


def test_same_seed_same_codes_alone_and_in_batches_of_different_composition(synth):
    a = sampled(synth, 1234)
    alone = synth.synthesize(
        [SpeechRequest(text="Hello there, general.", speaker="Vivian", language="English")],
        [SynthesisOptions(seed=1234, max_new_tokens=FRAMES + 1)],
    )[0]
    assert alone.shape == (FRAMES, 16)
    runner = synth.runner_for(4, 200)
    again = generate_codes(runner, [a[0]], [a[1]])[0]
    np.testing.assert_array_equal(again, alone)

    # In a batch, as the last of three slots, next to different texts, seeds and a greedy neighbour.
    b = sampled(synth, 99, text="Another sentence entirely, much longer than the first one.")
    c = sampled(synth, 1234, text="Same seed, other text.", non_streaming_mode=False)
    greedy = synth.sampling_params(SynthesisOptions(greedy=True, max_new_tokens=FRAMES + 1))
    batch = generate_codes(runner, [b[0], c[0], a[0]], [b[1], greedy, a[1]])
    np.testing.assert_array_equal(batch[2], alone)

    # Joining a running batch in another slot: a's draws depend only on its own seed and step count.
    runner.prefill(1, b[0], dataclasses.replace(b[1], max_new_tokens=40))
    for _ in range(5):
        runner.decode_step(torch.tensor([1]))
    runner.prefill(3, a[0], a[1])
    frames = []
    for _ in range(FRAMES):
        codes, finished = runner.decode_step(torch.tensor([3, 1]))
        frames.append(codes[0].numpy())
    assert bool(finished[0])
    np.testing.assert_array_equal(np.stack(frames), alone)


def test_different_seeds_give_different_codes(synth):
    codes = [
        synth.synthesize(
            [SpeechRequest(text="Hello there, general.", speaker="Vivian")],
            [SynthesisOptions(seed=s, max_new_tokens=FRAMES + 1)],
        )[0]
        for s in (1, 2)
    ]
    assert not np.array_equal(codes[0], codes[1])


@pytest.mark.parametrize(("min_new", "greedy"), [(2, True), (5, False)])
def test_generation_stops_at_eos_once_allowed_and_never_emits_it(synth, min_new, greedy):
    eos = synth.model.config.talker.codec_eos_token_id

    def favour_eos(_module, _inputs, logits):
        return logits + 1e4 * torch.nn.functional.one_hot(torch.tensor(eos), logits.shape[-1])

    prompt, _ = sampled(synth, 3)
    params = synth.sampling_params(SynthesisOptions(greedy=greedy, seed=3, max_new_tokens=FRAMES + 1))
    hook = synth.model.talker.codec_head.register_forward_hook(favour_eos)
    try:
        codes = generate_codes(
            synth.runner_for(1, 200), [prompt], [dataclasses.replace(params, min_new_tokens=min_new)]
        )
    finally:
        hook.remove()
    # Draws 0..min_new-1 cannot be EOS; draw min_new is EOS, so min_new frames come out, none of them EOS.
    assert codes[0].shape == (min_new, 16) and (codes[0][:, 0] != eos).all()


def test_chunked_prefill_gives_the_same_codes(synth):
    prompt, params = sampled(synth, 8, text="A prompt long enough to be cut into several chunks.")
    runner = synth.runner_for(2, 200)
    whole = generate_codes(runner, [prompt], [params])[0]
    runner.prefill(1, prompt, params, chunk_size=4)
    frames = [runner.decode_step(torch.tensor([1]))[0][0].numpy() for _ in range(FRAMES)]
    np.testing.assert_array_equal(np.stack(frames), whole)
