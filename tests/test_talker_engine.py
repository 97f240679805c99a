"""The talker engine on its own (no gRPC): scheduling, chunked prefill, admission limits, deadlines, drain.

Results are checked against the offline driver behind `omni synth` run on the request alone.
"""

import asyncio
import dataclasses
import math
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from omni.talker.engine import (
    ABORTED,
    DEADLINE,
    Chunk,
    ChunkLead,
    ChunkPlan,
    EngineClosed,
    Finished,
    FirstChunkSizing,
    PrefillCoalescing,
    QueueFull,
    Request,
    TalkerEngine,
)
from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest

TEXT_LONG = "This sentence is long enough that its prompt takes several prefill chunks to run."


@pytest.fixture(scope="module")
def synth(tiny_model_dir):
    return Synthesizer(tiny_model_dir("custom_voice"))


def speech(text: str) -> SpeechRequest:
    return SpeechRequest(text=text, speaker="Ryan", language="English")


def job(synth, text: str, seed: int, max_new: int, plan=None, deadline=None) -> Request:
    params = synth.sampling_params(SynthesisOptions(seed=seed, max_new_tokens=max_new))
    return Request(f"{seed}", synth.builder.build(speech(text)), params, plan or ChunkPlan(), deadline)


def solo(synth, text: str, seed: int, max_new: int) -> np.ndarray:
    return synth.synthesize([speech(text)], [SynthesisOptions(seed=seed, max_new_tokens=max_new)])[0]


async def drain_outputs(request: Request) -> tuple[np.ndarray, list[Chunk], Finished]:
    chunks = []
    while not isinstance(item := await request.outputs.get(), Finished):
        chunks.append(item)
    codes = np.concatenate([c.codes for c in chunks]) if chunks else np.zeros((0, 16), np.int64)
    return codes, chunks, item


class RecordingEngine(TalkerEngine):
    """Records what each step ran: {request id: prompt positions prefilled} and the ids decoded."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.steps: list[tuple[dict[str, int], list[str]]] = []

    def _launch(self, plan):
        prefills = {r.request_id: end - start for r, _, start, end in plan.prefills}
        self.steps.append((prefills, [r.request_id for r in plan.decodes]))
        return super()._launch(plan)


@pytest.fixture(params=["sync", "async", "async-to-1"])
def scheduling(request) -> dict:
    """Engine kwargs for synchronous and asynchronous scheduling, and for asynchronous while one stream is held (the
    engine switching between the two as streams come and go): every behaviour holds under all three."""
    return {
        "sync": {"async_scheduling": False},
        "async": {"async_scheduling": True},
        "async-to-1": {"async_scheduling": False, "async_scheduling_max_streams": 1},
    }[request.param]


def engine_for(synth, cls=TalkerEngine, slots=4, max_len=160, **kwargs) -> TalkerEngine:
    runner = TalkerRunner(synth.model.talker, synth.model.config, slots, max_len)
    return cls(runner, **{"max_queue": 8, **kwargs})


def test_chunk_plan_sizes():
    plan = ChunkPlan(initial=1, steady=15, ramp=(4, 8))
    assert [plan.size(k) for k in range(5)] == [1, 4, 8, 15, 15]
    assert [ChunkPlan().size(k) for k in range(3)] == [1, 15, 15]


def test_first_chunk_sizing_is_busy_from_busy_streams_held():
    sizing = FirstChunkSizing(frames=2, busy_frames=3, busy_streams=4)
    assert [sizing.frames_for(held) for held in (1, 3, 4, 500)] == [2, 2, 3, 3]
    assert FirstChunkSizing(2, 3, busy_streams=0).frames_for(10**6) == 2  # 0: never busy


def test_the_engine_sizes_first_chunks_by_the_requests_it_holds(synth, scheduling):
    """Two slots, four requests at once, busy from three held: the two admitted first (four held) get a 3-frame first
    chunk, the two admitted when those end (two held) the usual 2, and a request with its own first chunk keeps it."""
    texts = ["Hi.", "Hello there.", "Good morning.", "See you."]

    async def scenario():
        engine = engine_for(synth, slots=2, first_chunk=FirstChunkSizing(2, 3, busy_streams=3), **scheduling)
        plans = [ChunkPlan(0, 4), ChunkPlan(0, 4), ChunkPlan(0, 4), ChunkPlan(1, 4)]
        jobs = [
            engine.submit(job(synth, t, seed, 12, plan))
            for seed, (t, plan) in enumerate(zip(texts, plans, strict=True))
        ]
        engine.start()
        try:
            return engine, await asyncio.gather(*map(drain_outputs, jobs))
        finally:
            await engine.stop()

    engine, results = asyncio.run(scenario())
    firsts = [len(chunks[0].codes) for _, chunks, _ in results]
    assert firsts == [3, 3, 2, 1]
    for seed, (text, (codes, chunks, done)) in enumerate(zip(texts, results, strict=True)):
        np.testing.assert_array_equal(codes, solo(synth, text, seed, 12))  # chunking never changes the frames
        assert [len(c.codes) for c in chunks[1:-1]] == [4] * (len(chunks) - 2) and done.num_frames == len(codes)
    registry = engine.metrics.server.registry
    picked = {f: registry.get_sample_value("omni_talker_first_chunk_frames_total", {"frames": f}) for f in "23"}
    assert picked == {"2": 1.0, "3": 2.0}  # the explicit plan is not counted


class LateArrivals(TalkerEngine):
    """Submits `late` requests as it plans its second step: they arrive after the first request got its slot."""

    def __init__(self, *args, late=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.late, self.plans = list(late), 0

    def _plan(self):
        self.plans += 1
        if self.plans == 2:
            for request in self.late:
                self.submit(request)
        return super()._plan()


def test_a_first_chunk_is_sized_when_it_is_due_not_at_admission(synth, scheduling):
    """A request admitted alone (one held, not busy) whose first chunk falls due after two more arrived (three held,
    busy from three) gets the busy 3 frames: the first requests of a burst are admitted before the rest arrive."""
    late = [job(synth, "Hello there.", 1, 12, ChunkPlan(0, 4)), job(synth, "See you.", 2, 12, ChunkPlan(0, 4))]

    async def scenario():
        engine = engine_for(synth, LateArrivals, late=late, first_chunk=FirstChunkSizing(2, 3, 3), **scheduling)
        engine.start()
        try:
            first = engine.submit(job(synth, "Hi.", 0, 12, ChunkPlan(0, 4)))
            return engine, await asyncio.gather(*map(drain_outputs, [first, *late]))
        finally:
            await engine.stop()

    engine, results = asyncio.run(scenario())
    assert engine.plans > 2 and [len(chunks[0].codes) for _, chunks, _ in results] == [3, 3, 3]
    registry = engine.metrics.server.registry
    assert registry.get_sample_value("omni_talker_first_chunk_frames_total", {"frames": "3"}) == 3.0


def test_chunk_lead_says_when_the_lead_falls_under_the_floor():
    assert ChunkLead().flush_by(10.0, 3) == math.inf  # no floor: planned sizes only
    assert ChunkLead(min_lead_ms=150, frame_ms=80).flush_by(10.0, 3) == pytest.approx(10.09)  # 240 - 150 ms after


def steps_of(step_s: float):
    """An engine clock that reads `step_s` more at each step's delivery: step n delivers frame n at n x step_s."""
    calls = iter(range(1, 10**6))
    return lambda: next(calls) * step_s


def lead_run(synth, scheduling, step_s: float, lead: ChunkLead) -> tuple[list[int], np.ndarray, TalkerEngine]:
    """One request of 40 forced frames (EOS blocked), plan 2 / 4, 8 / 15, on a clock of `step_s` per step."""

    async def scenario():
        engine = engine_for(synth, lead=lead, clock=steps_of(step_s), **scheduling)
        request = job(synth, "Hello there.", 3, 40, ChunkPlan(2, 15, (4, 8)))
        request.params = dataclasses.replace(request.params, min_new_tokens=40)
        engine.submit(request)
        engine.start()
        try:
            return engine, await drain_outputs(request)
        finally:
            await engine.stop()

    engine, (codes, chunks, done) = asyncio.run(scenario())
    assert done.num_frames == len(codes) >= 39
    return [len(c.codes) for c in chunks], codes, engine


def test_held_frames_go_out_early_when_the_listeners_lead_falls_under_the_floor(synth, scheduling):
    """Steps of 60 ms, 80 ms frames, floor 110 ms. The first chunk (2 frames) leaves at 0.12 s; by hand, the lead
    falls under 110 ms at 0.17, 0.33, 0.49, 0.73, 1.05, 1.45, 2.01 s (then 2.73, after the last frame), so the chunks
    planned as 4, 8, 15, 15 go out as 2, 2, 3, 4, 5, 7, 9 frames; a stream whose steps keep it ahead (10 ms) keeps
    the planned sizes, as does one whose steps are slower than its frames play, and where chunks break never changes
    the frames."""
    early, codes, engine = lead_run(synth, scheduling, 0.06, ChunkLead(min_lead_ms=110, frame_ms=80))
    assert early[:-1] == [2, 2, 2, 3, 4, 5, 7, 9]
    registry = engine.metrics.server.registry
    assert registry.get_sample_value("omni_talker_early_chunk_frames_count") == 7.0
    assert registry.get_sample_value("omni_talker_early_chunk_frames_sum") == 32.0

    planned, planned_codes, _ = lead_run(synth, scheduling, 0.06, ChunkLead())
    ahead, _, _ = lead_run(synth, scheduling, 0.01, ChunkLead(min_lead_ms=110, frame_ms=80))
    # Steps 100 ms apart, slower than the frames play: the lead only shrinks, and chunks of 2 would not feed the
    # listener, only load the codec; the planned sizes stay.
    overloaded, _, _ = lead_run(synth, scheduling, 0.1, ChunkLead(min_lead_ms=110, frame_ms=80))
    assert planned[:-1] == ahead[:-1] == overloaded[:-1] == [2, 4, 8, 15]
    np.testing.assert_array_equal(codes, planned_codes)


def test_long_prompt_is_prefilled_in_chunks_while_others_decode(synth, scheduling):
    budget = 6

    async def scenario():
        engine = engine_for(synth, RecordingEngine, prefill_budget=budget, **scheduling)
        engine.start()
        try:
            short = engine.submit(job(synth, "Hi.", 1, 30))
            first = await short.outputs.get()  # `short` is decoding now
            assert isinstance(first, Chunk)
            long = engine.submit(job(synth, TEXT_LONG, 2, 8, ChunkPlan(2, 3)))
            results = await asyncio.gather(drain_outputs(short), drain_outputs(long))
            return engine.steps, first, results, engine
        finally:
            await engine.stop()

    steps, first, ((short_codes, _, _), (long_codes, long_chunks, long_done)), engine = asyncio.run(scenario())
    long_prompt = len(synth.builder.build(speech(TEXT_LONG)))
    assert long_prompt > 3 * budget
    long_prefill_steps = [(p, d) for p, d in steps if "2" in p]
    assert sum(p["2"] for p, _ in long_prefill_steps) == long_prompt
    assert all(sum(p.values()) <= budget for p, _ in steps)
    # Every step that prefilled part of the long prompt also decoded the short stream (until it ended).
    assert len(long_prefill_steps) >= 4 and all("1" in d for _, d in long_prefill_steps[:-1])
    np.testing.assert_array_equal(np.concatenate([first.codes, short_codes]), solo(synth, "Hi.", 1, 30))
    np.testing.assert_array_equal(long_codes, solo(synth, TEXT_LONG, 2, 8))
    assert [len(c.codes) for c in long_chunks] == [2, 3, len(long_codes) - 5]
    assert long_done.prompt_tokens == long_prompt and long_done.num_frames == len(long_codes)
    assert not engine.slots and sorted(engine.free) == list(range(4))


def test_a_step_token_budget_gives_prefill_the_positions_the_decoding_rows_leave(synth, scheduling):
    """With step_token_budget 12 and prefill_budget 6, a prompt arriving while one stream decodes is prefilled 11
    positions a step (12 less the one decoding row), not 6; with many rows decoding, prefill_budget is the floor."""

    async def scenario():
        engine = engine_for(synth, RecordingEngine, prefill_budget=6, step_token_budget=12, **scheduling)
        engine.start()
        try:
            short = engine.submit(job(synth, "Hi.", 1, 30))
            first = await short.outputs.get()  # `short` is decoding now
            long = engine.submit(job(synth, TEXT_LONG, 2, 8))
            return engine, first, await asyncio.gather(drain_outputs(short), drain_outputs(long))
        finally:
            await engine.stop()

    engine, first, ((short_codes, _, _), (long_codes, _, _)) = asyncio.run(scenario())
    long_prompt = len(synth.builder.build(speech(TEXT_LONG)))
    chunks = [(prefills["2"], decodes) for prefills, decodes in engine.steps if "2" in prefills]
    assert sum(n for n, _ in chunks) == long_prompt > 2 * 11
    assert all(n == 11 and "1" in decodes for n, decodes in chunks[:-1])  # the short stream decoded beside each
    assert [engine.prefill_positions(rows) for rows in (0, 1, 6, 7, 100)] == [12, 11, 6, 6, 6]
    np.testing.assert_array_equal(np.concatenate([first.codes, short_codes]), solo(synth, "Hi.", 1, 30))
    np.testing.assert_array_equal(long_codes, solo(synth, TEXT_LONG, 2, 8))


def test_a_negative_step_token_budget_is_refused(synth):
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig

    with pytest.raises(ValueError, match="step_token_budget >= 0"):
        engine_for(synth, step_token_budget=-1)
    with pytest.raises(ValueError, match="step_token_budget >= 0"):
        TalkerConfig(step_token_budget=-1).validate()
    env = {"OMNI_TALKER_STEP_TOKEN_BUDGET": "0"}
    assert load_config(TalkerConfig, "talker", env=env).step_token_budget == 0 and TalkerConfig().step_token_budget


def test_async_scheduling_max_streams_is_a_checked_setting_read_from_the_environment(synth):
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig

    with pytest.raises(ValueError, match="async_scheduling_max_streams must be >= 0, got -1"):
        TalkerConfig(async_scheduling_max_streams=-1).validate()
    with pytest.raises(ValueError, match="async_scheduling_max_streams >= 0"):
        engine_for(synth, async_scheduling_max_streams=-1)
    config = load_config(TalkerConfig, "talker", env={"OMNI_TALKER_ASYNC_SCHEDULING_MAX_STREAMS": "64"})
    assert config.async_scheduling_max_streams == 64 and TalkerConfig().async_scheduling_max_streams == 0


def test_first_chunk_settings_are_checked_and_read_from_the_environment():
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig

    with pytest.raises(ValueError, match="busy_streams must be >= 0"):
        TalkerConfig(busy_streams=-1).validate()
    with pytest.raises(ValueError, match=r"busy_initial_chunk_frames must be in \[1, max_chunk_frames=100\], got 0"):
        TalkerConfig(busy_initial_chunk_frames=0).validate()
    with pytest.raises(ValueError, match="min_lead_ms must be >= 0, got -1"):
        TalkerConfig(min_lead_ms=-1).validate()
    env = {
        "OMNI_TALKER_BUSY_STREAMS": "0",
        "OMNI_TALKER_BUSY_INITIAL_CHUNK_FRAMES": "5",
        "OMNI_TALKER_MIN_LEAD_MS": "150",
    }
    config = load_config(TalkerConfig, "talker", env=env)
    assert (config.busy_streams, config.busy_initial_chunk_frames, config.min_lead_ms) == (0, 5, 150.0)
    assert TalkerConfig().min_lead_ms == 200.0
    assert (TalkerConfig().busy_streams, TalkerConfig().busy_initial_chunk_frames) == (256, 4)


def test_a_new_stream_decodes_its_first_frame_in_the_step_that_completes_its_prefill(synth, scheduling):
    budget = 6

    async def scenario(decode_in_prefill_step: bool):
        engine = engine_for(
            synth, RecordingEngine, prefill_budget=budget, decode_in_prefill_step=decode_in_prefill_step, **scheduling
        )
        engine.start()
        try:
            return engine.steps, await drain_outputs(engine.submit(job(synth, TEXT_LONG, 2, 8)))
        finally:
            await engine.stop()

    for decode_in_prefill_step in (True, False):
        steps, (codes, _, _) = asyncio.run(scenario(decode_in_prefill_step))
        np.testing.assert_array_equal(codes, solo(synth, TEXT_LONG, 2, 8))
        prefill_steps = [n for n, (prefills, _) in enumerate(steps) if prefills]
        first_decode = next(n for n, (_, decodes) in enumerate(steps) if decodes)
        assert len(prefill_steps) > 3  # chunked: only the last chunk's step may decode it
        assert first_decode == prefill_steps[-1] + (0 if decode_in_prefill_step else 1)


def test_a_request_of_two_ids_gets_its_one_frame_from_the_step_that_completes_its_prefill(synth, scheduling):
    """That step draws the prompt's first id and then its second, the last: the frame must still come out (the flag
    saying whether the first id ended the stream is read before the decode step sets it for the second)."""

    async def scenario():
        engine = engine_for(synth, RecordingEngine, **scheduling)
        engine.start()
        try:
            return engine.steps, await drain_outputs(engine.submit(job(synth, "Hi.", 5, 2)))
        finally:
            await engine.stop()

    steps, (codes, chunks, done) = asyncio.run(scenario())
    assert steps[0] == ({"5": len(synth.builder.build(speech("Hi.")))}, ["5"])
    assert done.reason == "max_new_tokens" and done.num_frames == 1 and len(chunks) == 1
    np.testing.assert_array_equal(codes, solo(synth, "Hi.", 5, 2))


def test_more_requests_than_slots_wait_and_each_equals_its_solo_run(synth, scheduling):
    texts = ["One.", "Two words.", "Three more words.", "Four.", "Five six.", "Seven."]

    async def scenario():
        engine = engine_for(synth, slots=2, prefill_budget=64, **scheduling)
        engine.start()
        try:
            requests = [engine.submit(job(synth, t, 10 + i, 4 + i)) for i, t in enumerate(texts)]
            assert len(engine.waiting) == len(texts)  # nothing admitted before the engine's next step
            return await asyncio.gather(*(drain_outputs(r) for r in requests))
        finally:
            await engine.stop()

    results = asyncio.run(scenario())
    for i, (text, (codes, _, done)) in enumerate(zip(texts, results, strict=True)):
        np.testing.assert_array_equal(codes, solo(synth, text, 10 + i, 4 + i))
        assert done.reason in ("eos", "max_new_tokens")
    assert max(done.queue_ms for _, _, done in results) > 0


def test_admission_limits(synth):
    async def scenario():
        engine = engine_for(synth, slots=1, max_queue=1, max_len=40, retry_after_s=2.0)  # not started: nothing runs
        with pytest.raises(ValueError, match="exceeds the context limit 40"):
            engine.submit(job(synth, "Hi.", 0, 39))
        engine.submit(job(synth, "Hi.", 0, 5))  # takes the free slot at the next step
        engine.submit(job(synth, "Hi.", 1, 5))  # waits
        with pytest.raises(QueueFull) as full:
            engine.submit(job(synth, "Hi.", 2, 5))
        assert full.value.retry_after_s == 2.0
        await engine.drain(0)
        with pytest.raises(EngineClosed):
            engine.submit(job(synth, "Hi.", 3, 5))
        await engine.stop()

    asyncio.run(scenario())


def test_deadline_while_waiting_and_while_decoding(synth, scheduling):
    async def scenario():
        engine = engine_for(synth, slots=1, **scheduling)
        engine.start()
        try:
            running = engine.submit(job(synth, "Hi.", 5, 140, deadline=time.monotonic() + 0.3))
            expired = engine.submit(job(synth, "Hi.", 6, 5, deadline=time.monotonic() - 1))
            return await asyncio.gather(drain_outputs(running), drain_outputs(expired)), engine
        finally:
            await engine.stop()

    ((codes, _, running), (_, chunks, expired)), engine = asyncio.run(scenario())
    assert expired.reason == DEADLINE and not chunks and expired.num_frames == 0
    assert running.reason == DEADLINE and running.num_frames < 139
    if len(codes):  # what it sent before the deadline is the start of its solo run
        np.testing.assert_array_equal(codes, solo(synth, "Hi.", 5, len(codes) + 1))
    assert not engine.slots and not engine.waiting


def test_drain_aborts_what_is_left_after_the_grace_period(synth, scheduling):
    async def scenario():
        engine = engine_for(synth, slots=1, **scheduling)
        engine.start()
        try:
            running = engine.submit(job(synth, "Hi.", 5, 140))
            waiting = engine.submit(job(synth, "Hi.", 6, 5))
            await running.outputs.get()
            await engine.drain(0.05)
            return await drain_outputs(running), await drain_outputs(waiting), engine
        finally:
            await engine.stop()

    (_, _, running), (_, _, waiting), engine = asyncio.run(scenario())
    assert running.reason == ABORTED and waiting.reason == ABORTED
    assert not engine.accepting and not engine.slots


class GatedEngine(TalkerEngine):
    """Each step that prefills waits for `gate`, so a test can act while one is in flight."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def _launch(self, plan):
        if plan.prefills:
            self.entered.set()
            self.gate.wait(10)
        return super()._launch(plan)


def test_a_request_cancelled_during_its_prefill_frees_its_slot_and_others_are_unaffected(synth, scheduling):
    async def scenario():
        engine = engine_for(synth, GatedEngine, slots=1, **scheduling)
        engine.start()
        try:
            doomed = engine.submit(job(synth, "Gone.", 3, 6))
            await asyncio.to_thread(engine.entered.wait, 10)
            engine.cancel(doomed)  # while the step that completes its prompt is in flight
            assert engine.free == [0] and not engine.slots
            engine.gate.set()
            kept = engine.submit(job(synth, "Kept.", 4, 6))
            outputs = asyncio.gather(drain_outputs(doomed), drain_outputs(kept))
            return *(await asyncio.wait_for(outputs, 60)), engine
        finally:
            await engine.stop()

    (doomed_codes, _, doomed_done), (codes, _, done), engine = asyncio.run(scenario())
    assert doomed_done.reason == "cancelled" and len(doomed_codes) == 0
    np.testing.assert_array_equal(codes, solo(synth, "Kept.", 4, 6))
    assert done.reason in ("eos", "max_new_tokens") and engine.free == [0]


def test_prefill_coalescing_rule():
    rule = PrefillCoalescing(min_batch=3, max_wait_ms=50)
    fresh = [SimpleNamespace(prefilled=0, admitted=10.0)]
    assert rule.hold(fresh, decoding=True, now=10.01)  # alone, 10 ms old, streams decoding
    assert not rule.hold(fresh, decoding=False, now=10.01)  # nothing decodes: start at once
    assert not rule.hold(fresh, decoding=True, now=10.06)  # waited max_wait_ms
    assert not rule.hold(fresh * 3, decoding=True, now=10.01)  # min_batch reached
    assert not rule.hold([SimpleNamespace(prefilled=5, admitted=10.0)], decoding=True, now=10.01)  # part-way
    assert not PrefillCoalescing().hold(fresh, decoding=True, now=10.01)  # default: never hold


def test_coalesced_prompts_share_one_prefill_and_keep_their_codes(synth, scheduling):
    async def scenario():
        coalescing = PrefillCoalescing(min_batch=2, max_wait_ms=60_000)
        engine = engine_for(synth, RecordingEngine, coalescing=coalescing, **scheduling)
        engine.start()
        try:
            keep = job(synth, "Keep going.", 1, 100)
            keep.params.min_new_tokens = keep.params.max_new_tokens  # no early EOS: it decodes all along
            runner = engine.submit(keep)
            await runner.outputs.get()  # decoding now
            first = engine.submit(job(synth, "First.", 2, 6))
            for _ in range(5):  # steps pass; `first` is held while it is alone
                await asyncio.sleep(0.02)
            held = not first.prefilled
            second = engine.submit(job(synth, "Second.", 3, 6))
            results = await asyncio.gather(drain_outputs(runner), drain_outputs(first), drain_outputs(second))
            return engine.steps, held, results
        finally:
            await engine.stop()

    steps, held, (_, (first_codes, _, _), (second_codes, _, _)) = asyncio.run(scenario())
    assert held
    prefills = [p for p, _ in steps if "2" in p or "3" in p]
    assert prefills == [{"2": prefills[0]["2"], "3": prefills[0]["3"]}]  # one forward for both prompts
    assert any(not p and "1" in d for p, d in steps)  # decode-only steps ran while `first` was held
    np.testing.assert_array_equal(first_codes, solo(synth, "First.", 2, 6))
    np.testing.assert_array_equal(second_codes, solo(synth, "Second.", 3, 6))


class OrderEngine(TalkerEngine):
    """Logs the engine thread's launches and read-backs, each step by its launch number."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, int]] = []
        self.launched: list = []  # in launch order: a step's number is its place here

    def _launch(self, plan):
        launched = super()._launch(plan)
        self.launched.append(launched)
        self.log.append(("launch", len(self.launched)))
        return launched

    def _collect(self, launched):
        self.log.append(("collect", next(n for n, s in enumerate(self.launched, 1) if s is launched)))
        return super()._collect(launched)


def test_async_scheduling_queues_the_next_step_before_reading_one_back(synth):
    async def scenario(async_scheduling: bool):
        engine = engine_for(synth, OrderEngine, async_scheduling=async_scheduling)
        engine.start()
        try:
            codes, _, done = await drain_outputs(engine.submit(job(synth, "Hi.", 7, 12)))
            for _ in range(1000):  # the engine reads its last step back after the request ended: let it
                if engine.log[-1] == ("collect", len(engine.launched)):
                    break
                await asyncio.sleep(0.01)
            return engine.log, codes, done
        finally:
            await engine.stop()

    for async_scheduling in (False, True):
        log, codes, done = asyncio.run(scenario(async_scheduling))
        np.testing.assert_array_equal(codes, solo(synth, "Hi.", 7, 12))
        steps = [step for what, step in log if what == "launch"]
        if async_scheduling:
            # Each step is read back after the next one was queued (the last one, with nothing left to queue, after
            # the one before it). The prefill's step decodes the first frame, and the request was stepped once past
            # its last frame: frames + 1 launches.
            want = [("launch", 1)] + [e for n in steps[1:] for e in (("launch", n), ("collect", n - 1))]
            assert log == want + [("collect", steps[-1])]
            assert len(steps) == done.num_frames + 1
        else:
            assert log == [(what, n) for n in steps for what in ("launch", "collect")]
            assert len(steps) == done.num_frames


class HeldOrderEngine(OrderEngine):
    """OrderEngine that also records how many streams held a slot when each step was launched."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.held: list[int] = []

    def _launch(self, plan):
        self.held.append(len(self.slots))
        return super()._launch(plan)


def test_async_scheduling_by_streams_queues_ahead_only_while_few_streams_are_held(synth):
    """async_scheduling_max_streams 1: while one stream is held each step is read back after the next one was queued;
    while two are, each is read back before the next is launched (a step still in flight first); never more than two
    steps are queued. Both streams equal their solo runs."""

    async def scenario():
        engine = engine_for(synth, HeldOrderEngine, async_scheduling_max_streams=1)
        engine.start()
        try:
            long = engine.submit(job(synth, TEXT_LONG, 11, 20))
            first = await long.outputs.get()  # the long one alone for a while, then both, then the long one again
            short = engine.submit(job(synth, "Hi.", 12, 6))
            (long_codes, _, long_done), (short_codes, _, _) = await asyncio.gather(
                drain_outputs(long), drain_outputs(short)
            )
            for _ in range(1000):  # the engine reads its last step back after the requests ended: let it
                if engine.log[-1] == ("collect", len(engine.launched)):
                    break
                await asyncio.sleep(0.01)
            return engine, np.concatenate([first.codes, long_codes]), long_done, short_codes
        finally:
            await engine.stop()

    engine, long_codes, long_done, short_codes = asyncio.run(scenario())
    np.testing.assert_array_equal(long_codes, solo(synth, TEXT_LONG, 11, 20))
    np.testing.assert_array_equal(short_codes, solo(synth, "Hi.", 12, 6))
    log, held = engine.log, engine.held
    assert sorted(set(held)) == [1, 2] and held[0] == 1 and held[-1] == 1  # both modes, and the switches both ways
    assert sorted(n for what, n in log if what == "collect") == list(range(1, len(held) + 1))  # each read back once
    at = {event: i for i, event in enumerate(log)}
    # Step n+1 is queued before step n is read back exactly when both were launched with one stream held: a step
    # launched with two is read back at once, and one queued ahead is read back before a step planned with two.
    ahead = [held[n] == 1 and held[n + 1] == 1 for n in range(len(held) - 1)]
    assert ahead == [at[("collect", n)] > at[("launch", n + 1)] for n in range(1, len(held))], (held, log)
    assert any(ahead) and not all(ahead)
    assert (1, 2) in zip(held, held[1:], strict=False)  # a step queued ahead still in flight at a switch to sync
    in_flight = 0
    for what, _ in log:
        in_flight += 1 if what == "launch" else -1
        assert 0 <= in_flight <= 2
    assert long_done.num_frames == len(long_codes)


def test_async_scheduling_at_the_context_limit_keeps_its_extra_step_in_the_slot(synth):
    """A request that fills its slot (prompt + max_new_tokens = max_len) is stepped once past its last frame;
    that step must stay inside the K/V cache, and the stream next admitted to the slot must be unaffected."""
    prompt = len(synth.builder.build(speech("Hi.")))
    max_len = prompt + 9

    async def scenario():
        engine = engine_for(synth, slots=1, max_len=max_len, async_scheduling=True)
        engine.start()
        try:
            first = job(synth, "Hi.", 8, max_len - prompt)
            first.params.min_new_tokens = first.params.max_new_tokens  # no early EOS: it fills the slot
            results = [await drain_outputs(engine.submit(first))]
            results.append(await drain_outputs(engine.submit(job(synth, "Hi.", 9, max_len - prompt))))
            return results
        finally:
            await engine.stop()

    (codes, _, done), (next_codes, _, _) = asyncio.run(scenario())
    # max_new_tokens ids make max_new_tokens - 1 frames (the last id ends the stream), whose steps write K/V up to
    # position max_len - 2; the extra step writes max_len - 1, the slot's last position.
    assert done.reason == "max_new_tokens" and len(codes) == max_len - prompt - 1
    np.testing.assert_array_equal(next_codes, solo(synth, "Hi.", 9, max_len - prompt))


def test_step_trace_logs_what_each_step_ran(synth, scheduling, caplog):
    async def scenario():
        engine = engine_for(synth, RecordingEngine, prefill_budget=6, trace_steps=True, **scheduling)
        engine.start()
        try:
            request = engine.submit(job(synth, TEXT_LONG, 3, 6))
            codes, _, _ = await drain_outputs(request)
            return engine.steps, request.prompt_tokens, len(codes)
        finally:
            await engine.stop()

    with caplog.at_level("INFO", logger="omni.talker.engine"):
        steps, prompt_tokens, frames = asyncio.run(scenario())
    lines = [r.fields for r in caplog.records if r.getMessage() == "talker.step"]
    # One line per step read back, in order: the prompt in chunks of at most 6 positions, then one row a step, the
    # first of them the stream's first frame. Under async scheduling the step queued after the last frame may still be
    # in flight when the engine stops: it is not read back, so it has no line.
    ran = [(bool(p), len(d)) for p, d in steps]
    assert [(t["positions"] > 0, t["rows"]) for t in lines] == ran[: len(lines)] and len(lines) >= len(ran) - 1
    assert sum(t["positions"] for t in lines) == prompt_tokens and max(t["positions"] for t in lines) <= 6
    assert frames <= sum(t["rows"] for t in lines) <= frames + 1
    assert sum(t["first_rows"] for t in lines) == 1
    assert all(t["step_ms"] >= 0 and t["loop_ms"] >= 0 and t["prefill_ms"] >= 0 for t in lines)
