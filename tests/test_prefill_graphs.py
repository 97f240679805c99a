"""The capturable prefill (`TalkerRunner.prefill_padded` over `PrefillInputs`, bucketed by `plan_prefill`) leaves the
same per-slot state as `prefill_batch`, and mid-prompt or padding rows change nothing. The graphs themselves need
CUDA (`PrefillGraphs` refuses a CPU runner); on CPU the same inputs run the padded forward eagerly."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: the step write kernel runs on CPU tensors

import pytest
import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.tiny import tiny_config
from omni.talker.cuda_graphs import PrefillGraphs, PrefillInputs, plan_prefill, prefill_bucket_captured
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams

SLOTS = [3, 0, 2, 1]
LENGTHS = [13, 20, 31, 6]
CHUNKS = [9, 5, 16, 16]  # positions per forward for each slot: rows of one batch have different widths
MAX_NEW = 8
MAX_LEN = max(LENGTHS) + MAX_NEW  # tight: the last chunk of the longest prompt has padding positions past max_len
PARAMS = [
    SamplingParams(do_sample=False, subtalker_dosample=False, max_new_tokens=MAX_NEW),
    SamplingParams(seed=4, max_new_tokens=MAX_NEW),
    SamplingParams(seed=5, top_k=7, repetition_penalty=1.3, max_new_tokens=MAX_NEW),
    SamplingParams(seed=6, min_new_tokens=1, max_new_tokens=MAX_NEW),
]
STATE = ("pending", "next_pos", "drawn", "seen", "finished", "last_hidden")


@pytest.fixture(scope="module")
def model() -> tuple[Qwen3TTSTalker, Qwen3TTSConfig]:
    """The tiny talker shape (as the tiny checkpoints) with seeded random weights; no checkpoint to write."""
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice"))
    torch.manual_seed(0)
    return Qwen3TTSTalker(config.talker).eval(), config


def make_prompt(length: int, gen: torch.Generator, config: Qwen3TTSConfig) -> TalkerPrompt:
    t = config.talker
    codec = torch.randint(0, t.vocab_size, (length,), generator=gen)
    codec[torch.rand(length, generator=gen) < 0.5] = NO_ID  # both tracks, either, as real prompts
    return TalkerPrompt(
        text_ids=torch.randint(0, t.text_vocab_size, (length,), generator=gen),
        codec_ids=codec,
        trailing_ids=torch.randint(0, t.text_vocab_size, (4,), generator=gen),
    )


def padded_prefill(
    runner: TalkerRunner, chunks, batch_buckets, width_buckets, inputs: dict, max_positions=None
) -> list[int]:
    """`PrefillGraphs.prefill` with each bucket's padded forward run eagerly instead of replayed from a graph."""
    for bucket, group in plan_prefill(chunks, batch_buckets, width_buckets, max_positions):
        if bucket is None:
            runner.prefill_batch(group)
            continue
        if bucket not in inputs:
            inputs[bucket] = PrefillInputs(runner, *bucket)
        inputs[bucket].load(group)
        inputs[bucket].run()
    return [slot for slot, emb, _, end in chunks if end == emb.shape[0]]


def snapshot(runner: TalkerRunner, slots: list[int]) -> dict[str, torch.Tensor]:
    return {name: getattr(runner, name)[slots].clone() for name in STATE}


@pytest.mark.parametrize(
    "batch_buckets, width_buckets, max_positions, step_write_kernel",
    [
        ((1, 2, 4), (8, 24), None, False),  # padding rows (3 chunks in a 4-row bucket), positions clamped at max_len-1
        ((1, 2), (16, 32), None, False),  # more chunks than the largest batch bucket: several forwards per call
        ((4,), (8,), None, False),  # chunks wider than every width bucket fall back to prefill_batch, the others padded
        ((1, 2, 4), (8, 24), 16, False),  # a position cap: wide chunks go in smaller batches than short ones
        ((1, 2, 4), (8, 24), None, True),  # the first, each runner writing its slots after a draw by one kernel
    ],
)
def test_prefill_padded_equals_prefill_batch(model, batch_buckets, width_buckets, max_positions, step_write_kernel):
    talker, config = model
    eager = TalkerRunner(talker, config, 4, MAX_LEN, step_write_kernel=step_write_kernel)
    padded = TalkerRunner(talker, config, 4, MAX_LEN, scratch_slot=True, step_write_kernel=step_write_kernel)
    gen = torch.Generator().manual_seed(1)
    prompts = [make_prompt(n, gen, config) for n in LENGTHS]
    embeddings = []
    for slot, prompt, params in zip(SLOTS, prompts, PARAMS, strict=True):
        eager.begin_prefill(slot, prompt, params)  # the same embeddings: same weights
        embeddings.append(padded.begin_prefill(slot, prompt, params))

    inputs: dict = {}
    written = dict.fromkeys(SLOTS, 0)
    rounds = 0
    while any(written[s] < n for s, n in zip(SLOTS, LENGTHS, strict=True)):
        chunks = [
            (s, e, written[s], min(written[s] + c, len(e)))
            for s, e, c in zip(SLOTS, embeddings, CHUNKS, strict=True)
            if written[s] < len(e)
        ]
        mid_prompt = [s for s, e, _, end in chunks if end < len(e)]
        before = snapshot(padded, mid_prompt)
        want = eager.prefill_batch(chunks)
        got = padded_prefill(padded, chunks, batch_buckets, width_buckets, inputs, max_positions)
        assert got == want  # completed slots, in chunk order
        for name, value in snapshot(padded, mid_prompt).items():  # a mid-prompt chunk draws nothing
            assert torch.equal(value, before[name]), name
        for name in STATE[:-1]:
            assert torch.equal(getattr(padded, name)[SLOTS], getattr(eager, name)[SLOTS]), (rounds, name)
        torch.testing.assert_close(padded.last_hidden[SLOTS], eager.last_hidden[SLOTS], rtol=1e-5, atol=1e-5)
        for s, _, _, end in chunks:
            written[s] = end
            for cache in ("k", "v"):  # the prompt's K/V so far; junk past it is never read
                a, b = getattr(padded.cache, cache)[:, s, :end], getattr(eager.cache, cache)[:, s, :end]
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        scratch = padded.scratch_slot
        assert padded.next_pos[scratch] == 0 and padded.drawn[scratch] == 1
        assert not padded.finished[scratch] and not padded.seen[scratch].any()
        rounds += 1
    assert rounds == 4 and len(inputs) > 0
    if max_positions is not None:  # only captured buckets were used, and the cap changed the plan
        assert all(prefill_bucket_captured(b, w, batch_buckets, max_positions) for b, w in inputs)
        assert (1, 24) in inputs and (4, 24) not in inputs

    rows = torch.tensor(SLOTS)
    padded_rows = torch.tensor([*SLOTS, padded.scratch_slot])  # one padding row, as a decode graph bucket has
    for step in range(6):
        want_codes, want_finished = eager.decode_step(rows)
        got_codes, got_finished = padded.decode_step_padded(padded_rows)
        assert torch.equal(got_codes[:4], want_codes), f"step {step}"
        assert torch.equal(got_finished[:4], want_finished), f"step {step}"


def test_plan_prefill_buckets_splits_and_falls_back():
    emb = torch.zeros(600, 1)

    def chunks(*widths):
        return [(slot, emb, 0, w) for slot, w in enumerate(widths)]

    batch, width = (1, 2, 4, 8, 16), (32, 64, 128, 256, 512)
    assert plan_prefill([], batch, width) == []
    assert plan_prefill(chunks(5), batch, width) == [((1, 32), chunks(5))]
    five_33_7 = chunks(5, 33, 7)  # narrowest first; padding 5 and 7 to 64 costs less than a second forward
    assert plan_prefill(five_33_7, batch, width) == [((4, 64), [five_33_7[0], five_33_7[2], five_33_7[1]])]
    twenty = chunks(*[10] * 19, 300)
    want = [((16, 32), twenty[:16]), ((4, 32), twenty[16:19]), ((1, 512), twenty[19:])]  # 10s not padded to 512
    assert plan_prefill(twenty, batch, width) == want
    mixed = chunks(40, 600, 8)
    assert plan_prefill(mixed, batch, width) == [(None, [mixed[1]]), ((2, 64), [mixed[2], mixed[0]])]


def test_plan_prefill_keeps_large_batches_to_short_widths():
    emb = torch.zeros(600, 1)

    def chunks(*widths):
        return [(slot, emb, 0, w) for slot, w in enumerate(widths)]

    batch, width, cap = (1, 2, 4, 8, 16, 32, 64), (32, 64, 128, 256, 512), 16 * 512
    burst = chunks(*[30] * 40)  # a burst of short prompts: one forward of 64 rows x 32 positions
    assert plan_prefill(burst, batch, width, cap) == [((64, 32), burst)]
    long = chunks(*[300] * 40)  # 512-wide rows: at most 16 per forward
    want = [((16, 512), long[:16]), ((16, 512), long[16:32]), ((8, 512), long[32:])]
    assert plan_prefill(long, batch, width, cap) == want
    assert plan_prefill(long, batch, width) == [((64, 512), long)]  # no cap: one bucket of 64 x 512
    tail = chunks(*[10] * 20, 300, 200)  # the wide chunk would need 32 x 512: it starts a group of its own
    assert plan_prefill(tail, batch, width, cap) == [((32, 32), tail[:20]), ((2, 512), [tail[21], tail[20]])]
    # A burst of mixed short prompts: the 30-position ones are not padded to 64 with the 36-position ones.
    wave = chunks(*[36, 30] * 12, *[30] * 13)
    got = plan_prefill(wave, batch, width, cap)
    assert [(bucket, sorted(c[3] for c in group)) for bucket, group in got] == [
        ((32, 32), [30] * 25),
        ((16, 64), [36] * 12),
    ]
    assert plan_prefill(chunks(600, 20), batch, width, cap) == [(None, chunks(600)), ((1, 32), chunks(600, 20)[1:])]
    # Captured: every pair within the cap, and the smallest batch at every width.
    assert prefill_bucket_captured(64, 128, batch, cap) and not prefill_bucket_captured(64, 256, batch, cap)
    assert prefill_bucket_captured(1, 10_000, batch, cap) and prefill_bucket_captured(64, 512, batch, None)


def test_bad_calls_fail_clearly(model):
    talker, config = model
    plain = TalkerRunner(talker, config, 2, 16)
    x = torch.zeros(1, 4, config.talker.hidden_size)
    one = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(ValueError, match="scratch_slot"):
        plain.prefill_padded(x, torch.arange(4)[None], one, one, one.bool())
    with pytest.raises(ValueError, match="scratch_slot"):
        PrefillInputs(plain, 1, 4)
    runner = TalkerRunner(talker, config, 2, 16, scratch_slot=True)
    with pytest.raises(ValueError, match="complete"):
        runner.prefill_padded(x, torch.arange(4)[None], one, one, one)  # complete must be bool
    with pytest.raises(ValueError, match="CUDA"):
        PrefillGraphs(runner)
    inputs = PrefillInputs(runner, 1, 4)
    emb = torch.zeros(8, config.talker.hidden_size)
    with pytest.raises(ValueError, match="1..4 positions"):
        inputs.load([(0, emb, 0, 5)])  # wider than the bucket
    with pytest.raises(ValueError, match="need 1..1 chunks"):
        inputs.load([(0, emb, 0, 2), (1, emb, 0, 2)])  # more rows than the bucket
