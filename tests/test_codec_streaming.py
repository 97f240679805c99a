"""Exact streaming over slots: chunking, batching, priming and slot reuse never change the samples.

Most tests use a tiny checkpoint with a sliding window of 8 frames, so that 40-frame streams wrap the K/V window
many times; one test keeps the released window of 72 with a longer stream. The target is the whole-utterance
decode (itself checked against qwen-tts in test_codec_decoder.py), to 1e-5 max abs in fp32. In fp64 the same runs
agree to 1e-12: what remains in fp32 is rounding from convolutions over different lengths, not approximation.
"""

import random

import pytest
import torch

from omni.models.qwen3_tts.codec import load_codec_decoder
from omni.models.qwen3_tts.codec_checkpoint import write_tiny_speech_tokenizer

FP32_TOL = 1e-5


@pytest.fixture(scope="module")
def window8(tmp_path_factory):
    return write_tiny_speech_tokenizer(tmp_path_factory.mktemp("w8"), seed=3, decoder_sliding_window=8)


def random_codes(frames: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 2048, (frames, 16), generator=torch.Generator().manual_seed(seed))


def cut(frames: int, plan) -> list[int]:
    """Chunk sizes for `frames`: "all", a list whose last size repeats, or ("random", seed)."""
    if plan == "all":
        return [frames]
    if isinstance(plan, tuple):
        rng = random.Random(plan[1])
        sizes = []
        while sum(sizes) < frames:
            sizes.append(min(rng.randint(1, 9), frames - sum(sizes)))
        return sizes
    sizes = []
    while sum(sizes) < frames:
        sizes.append(min(plan[min(len(sizes), len(plan) - 1)], frames - sum(sizes)))
    return sizes


def stream_side_by_side(decoder, state, streams):
    """Decode streams together: one decode_streams call per step over every stream that has a chunk left.

    Each stream is a dict(slot, codes, plan, start[, prime]); it joins at step `start` (after priming its slot).
    Returns {slot: concatenated new samples}.
    """
    pending = {}
    for s in streams:
        sizes = cut(len(s["codes"]), s["plan"])
        bounds = [(sum(sizes[:i]), sum(sizes[: i + 1])) for i in range(len(sizes))]
        pending[s["slot"]] = [s, bounds, []]
    step = 0
    while any(bounds for _, bounds, _ in pending.values()):
        slots, chunks = [], []
        for slot, (s, bounds, _) in pending.items():
            if step == s["start"] and "prime" in s:
                decoder.prime(state, slot, s["prime"])
            if step >= s["start"] and bounds:
                a, b = bounds.pop(0)
                slots.append(slot)
                chunks.append(s["codes"][a:b])
        if slots:
            for slot, wav in zip(slots, decoder.decode_streams(state, slots, chunks), strict=True):
                pending[slot][2].append(wav)
        step += 1
    return {slot: torch.cat(out) for slot, (_, _, out) in pending.items()}


PLANS = ["all", [1, 15], [1, 4, 15], [1], ("random", 0), ("random", 1)]


def make_streams(prime: bool):
    streams = []
    slots = [5, 0, 7, 2, 3, 6]
    lengths = [40, 33, 40, 27, 38, 31]
    starts = [0, 2, 5, 1, 3, 0]
    primes = [12, 5, 20, 1, 9, 30]
    for i, plan in enumerate(PLANS):
        s = dict(slot=slots[i], codes=random_codes(lengths[i], seed=10 + i), plan=plan, start=starts[i])
        if prime:
            s["prime"] = random_codes(primes[i], seed=50 + i)
        streams.append(s)
    return streams


def expected(decoder, s) -> torch.Tensor:
    """The stream's samples in a whole-utterance decode of [prime ‖ codes]."""
    prime = s.get("prime", s["codes"][:0])
    whole = decoder.decode(torch.cat([prime, s["codes"]])[None])[0]
    return whole[len(prime) * 1920 :]


@pytest.mark.parametrize("prime", [False, True], ids=["fresh", "primed"])
def test_chunked_streams_side_by_side_equal_whole_decode(window8, prime):
    decoder = load_codec_decoder(window8)
    streams = make_streams(prime)
    state = decoder.new_state(8)
    out = stream_side_by_side(decoder, state, streams)
    for s in streams:
        want = expected(decoder, s)
        assert out[s["slot"]].shape == want.shape == (len(s["codes"]) * 1920,)
        err = (out[s["slot"]] - want).abs().max().item()
        assert err < FP32_TOL, (s["plan"], err)
        assert want.std() > 0.02  # not a trivially silent signal
    # Priming really is context: the primed streams differ from the fresh ones.
    if prime:
        s = streams[0]
        assert (out[s["slot"]] - expected(decoder, {**s, "prime": s["codes"][:0]})).abs().max() > 1e-2


def test_exact_in_fp64(window8):
    decoder = load_codec_decoder(window8, dtype=torch.float64)
    streams = make_streams(prime=True)[:4]
    out = stream_side_by_side(decoder, decoder.new_state(8), streams)
    for s in streams:
        assert (out[s["slot"]] - expected(decoder, s)).abs().max() < 1e-12


def test_long_prime_runs_the_vocoder_on_its_tail_only_and_stays_exact(window8):
    """A 60-frame reference: the transformer sees all of it, the conv stack only the last prime_tail_frames."""
    decoder = load_codec_decoder(window8, dtype=torch.float64)
    seen = []
    hook = decoder.decoder[-1].register_forward_hook(lambda m, args, out: seen.append(args[0].shape[-1]))
    state = decoder.new_state(3)
    refs = [random_codes(60, seed=1), random_codes(4, seed=2)]
    decoder.prime_streams(state, [2, 0], refs)
    hook.remove()
    assert decoder.prime_tail_frames == 11  # ceil(9.38 frames of conv receptive field) + 1, same at the real config
    assert seen == [11 * 1920]  # one batched call; the 4-frame row is padded to the 11-frame tail
    assert state.positions.tolist() == [4, 0, 60]
    codes = [random_codes(25, seed=3), random_codes(25, seed=4)]
    got = decoder.decode_streams(state, [2, 0], codes)
    for ref, c, wav in zip(refs, codes, got, strict=True):
        assert (wav - expected(decoder, dict(codes=c, prime=ref))).abs().max() < 1e-12


def test_released_window_72_long_stream(tmp_path):
    decoder = load_codec_decoder(write_tiny_speech_tokenizer(tmp_path, seed=5))
    streams = [
        dict(slot=0, codes=random_codes(160, seed=1), plan=[1, 15], start=0, prime=random_codes(30, seed=2)),
        dict(slot=1, codes=random_codes(120, seed=3), plan=[1, 4, 15], start=7),
    ]
    out = stream_side_by_side(decoder, decoder.new_state(2), streams)
    for s in streams:
        assert (out[s["slot"]] - expected(decoder, s)).abs().max() < FP32_TOL


def test_reset_clears_a_slot_and_leaves_the_others(window8):
    decoder = load_codec_decoder(window8)
    state = decoder.new_state(3)
    a, b, c = random_codes(20, seed=1), random_codes(20, seed=2), random_codes(20, seed=3)
    first = decoder.decode_streams(state, [0, 1], [a[:10], b[:10]])
    decoder.reset(state, 0)
    assert int(state.positions[0]) == 0 and bool((state.key_positions[0] == -1).all())
    assert all(bool((h[0] == 0).all()) for h in state.history) and bool((state.key[:, 0] == 0).all())
    # Slot 0 now carries a new stream c; slot 1 continues b as if nothing happened.
    second = decoder.decode_streams(state, [1, 0], [b[10:], c])
    assert (torch.cat([first[1], second[0]]) - decoder.decode(b[None])[0]).abs().max() < FP32_TOL
    assert (second[1] - decoder.decode(c[None])[0]).abs().max() < FP32_TOL
    # Without the reset, slot 0 would have continued stream a: the result would differ.
    state2 = decoder.new_state(1)
    decoder.decode_streams(state2, [0], [a[:10]])
    assert (decoder.decode_streams(state2, [0], [c])[0] - second[1]).abs().max() > 1e-2


def test_reset_streams_clears_several_slots_at_once(window8):
    # The codec engine resets a step's new streams in one call: slots 0 and 2 start over, slot 1 goes on.
    decoder = load_codec_decoder(window8)
    state = decoder.new_state(3)
    a, b, c = random_codes(20, seed=4), random_codes(20, seed=5), random_codes(20, seed=6)
    first = decoder.decode_streams(state, [0, 1, 2], [a[:10], b[:10], c[:10]])
    decoder.reset_streams(state, [2, 0])
    second = decoder.decode_streams(state, [0, 1, 2], [c[:10], b[10:], a[:10]])
    assert (second[0] - first[2]).abs().max() < FP32_TOL and (second[2] - first[0]).abs().max() < FP32_TOL
    assert (torch.cat([first[1], second[1]]) - decoder.decode(b[None])[0]).abs().max() < FP32_TOL


def test_prime_emits_nothing_and_empty_chunks_touch_nothing(window8):
    decoder = load_codec_decoder(window8)
    state = decoder.new_state(2)
    decoder.prime(state, 1, random_codes(9, seed=1))
    assert int(state.positions[1]) == 9 and int(state.positions[0]) == 0
    before = [t.clone() for t in state.tensors()]
    out = decoder.decode_streams(state, [0, 1], [random_codes(0, seed=0), random_codes(0, seed=0)])
    assert [o.numel() for o in out] == [0, 0]
    after = state.tensors()
    assert all(torch.equal(x, y) for x, y in zip(before, after, strict=True))
    # A zero-length row next to a real one: the empty stream's state stays as it was.
    decoder.decode_streams(state, [0, 1], [random_codes(4, seed=2), random_codes(0, seed=0)])
    assert int(state.positions[1]) == 9 and torch.equal(state.key[:, 1], before[1][:, 1])


def test_decode_streams_rejects_bad_calls(window8):
    decoder = load_codec_decoder(window8)
    state = decoder.new_state(2)
    codes = random_codes(3, seed=0)
    with pytest.raises(ValueError, match="twice"):
        decoder.decode_streams(state, [0, 0], [codes, codes])
    with pytest.raises(ValueError, match="outside"):
        decoder.decode_streams(state, [2], [codes])
    with pytest.raises(ValueError, match="2 slots but 1 chunks"):
        decoder.decode_streams(state, [0, 1], [codes])
    with pytest.raises(ValueError, match="shape"):
        decoder.decode_streams(state, [0], [codes[None]])
    with pytest.raises(ValueError, match="2048"):
        decoder.prime(state, 0, codes + 2048)
    assert int(state.positions.sum()) == 0  # nothing was decoded by the rejected calls
