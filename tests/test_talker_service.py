"""The talker service over real gRPC on loopback with a tiny checkpoint.

Every stream's codes must equal the same request run alone through the offline driver behind `omni synth`
(seeded sampling is per-slot and counter-based, so batching cannot change a result), chunks must follow the
request's plan, and cancellation, deadlines, a full queue and malformed requests must end the call with the
right status while the slots come back.
"""

import asyncio
import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import torch
from omni.services.common.packing import pack_codes, unpack_codes
from omni.services.talker.config import TalkerConfig
from omni.services.talker.metrics import TalkerMetrics
from omni.services.talker.requests import prompt_from_proto, prompt_to_proto
from omni.services.talker.service import DEADLINE_SLACK_S, build_talker_service, cancel_reason, warm_up

from omni.commands.serve import free_port
from omni.proto import common_pb2, talker_pb2, talker_pb2_grpc
from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.prompt import SpeechRequest
from tests.grpc_health import wait_serving

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = 128
TEXTS = ["Hello there.", "How are you today?", "A short one.", "The quick brown fox jumps.", "Yes."]
SPEAKERS = ["Vivian", "Ryan", "Dylan", "Eric"]


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir):
    return tiny_model_dir("custom_voice")


@pytest.fixture(scope="module")
def synth(model_dir):
    return Synthesizer(model_dir)


def speech(i: int) -> SpeechRequest:
    return SpeechRequest(text=TEXTS[i % len(TEXTS)], speaker=SPEAKERS[i % len(SPEAKERS)], language="English")


def generate_request(synth, i: int, seed: int | None, max_new: int, plan=None, greedy=False):
    request = talker_pb2.GenerateRequest(
        request_id=f"r{i}", prompt=prompt_to_proto(synth.builder.build(speech(i))), max_new_tokens=max_new
    )
    if seed is not None:
        request.seed = seed
    if greedy:
        request.sampling.do_sample = False
        request.subtalker_sampling.do_sample = False
    if plan is not None:
        initial, steady, ramp = plan
        request.chunk_plan.initial_chunk_frames = initial
        request.chunk_plan.chunk_frames = steady
        request.chunk_plan.ramp.extend(ramp)
    return request


def solo(synth, i: int, seed: int, max_new: int, greedy=False) -> np.ndarray:
    """The request alone through the offline driver (what `omni synth` runs)."""
    options = SynthesisOptions(greedy=greedy, seed=seed, max_new_tokens=max_new)
    return synth.synthesize([speech(i)], [options])[0]


def plan_sizes(total: int, initial: int, steady: int, ramp: list[int]) -> list[int]:
    sizes = []
    while sum(sizes) < total:
        k = len(sizes)
        size = initial if k == 0 else ramp[k - 1] if k - 1 < len(ramp) else steady
        sizes.append(min(size, total - sum(sizes)))
    return sizes


async def collect(stub, request, **kwargs) -> tuple[np.ndarray, list, talker_pb2.GenerateSummary]:
    """All chunks of one stream, checked for order and framing; returns (codes, chunks, summary)."""
    messages = [m async for m in stub.Generate(request, **kwargs)]
    kinds = [m.WhichOneof("kind") for m in messages]
    assert kinds[-1] == "summary" and set(kinds[:-1]) <= {"chunk"}, kinds
    chunks = [m.chunk for m in messages[:-1]]
    starts = [c.first_frame_index for c in chunks]
    assert starts == [sum(c.num_frames for c in chunks[:k]) for k in range(len(chunks))]
    if chunks:
        assert chunks[0].first and not any(c.first for c in chunks[1:])
        assert chunks[-1].last and not any(c.last for c in chunks[:-1])
    codes = [unpack_codes(c.codes, c.num_frames, c.num_codebooks) for c in chunks]
    summary = messages[-1].summary
    codes = np.concatenate(codes) if codes else np.zeros((0, 16), np.int64)
    assert summary.num_frames == len(codes) and summary.num_chunks == len(chunks)
    return codes, chunks, summary


class Running:
    """An in-process talker service on a loopback port, with a channel and stub to it."""

    def __init__(self, model_dir: Path, **settings) -> None:
        # No lead floor unless a test asks: it moves chunk boundaries with this machine's step times, and these tests
        # check the planned sizes (the floor has its own tests, on a driven clock).
        settings = {"max_context": CONTEXT, "min_lead_ms": 0.0, **settings}
        self.config = TalkerConfig(model=str(model_dir), host="127.0.0.1", port=0, grace_s=1.0, **settings)

    async def __aenter__(self):
        self.metrics = TalkerMetrics()
        self.service, self.parts = build_talker_service(self.config, self.metrics)
        self.engine = self.parts.engine
        await self.service.start()
        self.engine.start()
        await warm_up(self.engine)
        await self.service.set_serving()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.service.port}")
        self.stub = talker_pb2_grpc.TalkerServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc):
        await self.channel.close()
        await self.service.stop(0.5)
        await self.engine.stop()

    async def load(self):
        return (await self.stub.GetLoad(talker_pb2.GetLoadRequest())).load

    async def wait_for(self, predicate, what: str) -> None:
        for _ in range(1000):
            if predicate(await self.load()):
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never reached: {what}; load {await self.load()}")

    async def wait_idle(self) -> None:
        await self.wait_for(lambda load: load.active_streams == 0 and load.queue_depth == 0, "no active slots")

    def outcome(self, reason: str) -> float:
        value = self.metrics.server.registry.get_sample_value("omni_talker_requests_total", {"outcome": reason})
        return value or 0.0


METRICS = (
    "omni_talker_frames_total",
    "omni_talker_prefill_tokens_total",
    "omni_talker_time_to_first_chunk_ms_count",
    "omni_talker_queue_wait_ms_count",
    "omni_talker_step_ms_count",
    "omni_talker_active_slots",
    "omni_talker_queue_depth",
    "omni_talker_capacity_slots",
)


def test_chunks_follow_the_plan_greedy_equals_synth_and_metrics_count(model_dir, synth):
    plans = [None, (1, 15, [15]), (1, 4, [2, 3]), (3, 2, [2]), (2, 5, [1])]  # [steady] = no ramp
    max_new = 20

    async def scenario():
        async with Running(model_dir) as svc:
            info = await svc.stub.GetModelInfo(talker_pb2.GetModelInfoRequest())
            assert (info.model_type, info.num_codebooks, info.max_context) == ("custom_voice", 16, CONTEXT)
            assert info.model.checkpoint_fingerprint == svc.parts.identity.checkpoint_fingerprint
            registry = svc.metrics.server.registry
            before = {name: registry.get_sample_value(name) for name in METRICS}
            requests = [generate_request(synth, i, None, max_new, plan, greedy=True) for i, plan in enumerate(plans)]
            results = await asyncio.gather(*(collect(svc.stub, r) for r in requests))
            await svc.wait_idle()
            after = {name: registry.get_sample_value(name) for name in METRICS}
            return results, before, after

    results, before, after = asyncio.run(scenario())
    # `omni synth` greedy (it batches the requests in slots of one runner).
    options = [SynthesisOptions(greedy=True, max_new_tokens=max_new)] * len(plans)
    want = synth.synthesize([speech(i) for i in range(len(plans))], options)
    for i, (plan, (codes, chunks, summary)) in enumerate(zip(plans, results, strict=True)):
        np.testing.assert_array_equal(codes, want[i])
        defaults = TalkerConfig()
        initial, steady, ramp = plan or (defaults.initial_chunk_frames, defaults.chunk_frames, defaults.chunk_ramp)
        assert [c.num_frames for c in chunks] == plan_sizes(len(codes), initial, steady, ramp)
        reason = talker_pb2.STOP_REASON_MAX_NEW_TOKENS if len(codes) == max_new - 1 else talker_pb2.STOP_REASON_EOS
        assert summary.stop_reason == reason
        assert summary.prompt_tokens == len(synth.builder.build(speech(i)))
    assert sum(len(r[0]) for r in results) > 4 * len(plans)  # the streams were long enough to chunk

    def delta(name: str) -> float:
        return after[name] - before[name]

    assert delta("omni_talker_frames_total") == sum(len(r[0]) for r in results)
    assert delta("omni_talker_prefill_tokens_total") == sum(r[2].prompt_tokens for r in results)
    assert delta("omni_talker_time_to_first_chunk_ms_count") == len(plans)
    assert delta("omni_talker_queue_wait_ms_count") == len(plans)
    assert delta("omni_talker_step_ms_count") >= max_new - 1
    assert (after["omni_talker_active_slots"], after["omni_talker_queue_depth"]) == (0, 0)
    assert after["omni_talker_capacity_slots"] == 32


def test_a_busy_talker_gives_default_plans_its_busy_first_chunk(model_dir, synth):
    """busy_streams 1: every request the talker holds makes it busy, so a request with the default plan gets
    busy_initial_chunk_frames (4) in its first chunk, the default ramp after it; one with its own first chunk keeps
    it."""
    max_new = 20

    async def scenario():
        async with Running(model_dir, busy_streams=1, busy_initial_chunk_frames=4) as svc:
            requests = [
                generate_request(synth, i, None, max_new, plan, greedy=True)
                for i, plan in [(0, None), (1, (1, 15, [15]))]
            ]
            return await asyncio.gather(*(collect(svc.stub, r) for r in requests))

    (default_codes, default_chunks, _), (own_codes, own_chunks, _) = asyncio.run(scenario())
    defaults = TalkerConfig()
    sizes = plan_sizes(len(default_codes), 4, defaults.chunk_frames, defaults.chunk_ramp)
    assert len(default_codes) > 4 and [c.num_frames for c in default_chunks] == sizes
    assert [c.num_frames for c in own_chunks] == plan_sizes(len(own_codes), 1, 15, [15])


def test_a_lead_floor_sends_held_frames_before_their_chunk_is_full(model_dir, synth):
    """min_lead_ms far above any stream's audio: after the first chunk every listener is always short, so each pair
    of frames goes out at once instead of waiting for the ramp (2, 4, 8) and 15-frame chunks; the frames are the
    stream's own (the request alone through the offline driver). The engine's clock reads 10 ms a step, faster than
    80 ms frames play (early chunks are sent only then), whatever this machine's step takes."""
    max_new = 20

    async def scenario():
        async with Running(model_dir, min_lead_ms=1e6) as svc:
            steps = itertools.count(1)
            start = time.perf_counter()
            svc.engine.clock = lambda: start + next(steps) * 0.01
            return await collect(svc.stub, generate_request(synth, 0, None, max_new, greedy=True))

    codes, chunks, _ = asyncio.run(scenario())
    np.testing.assert_array_equal(codes, solo(synth, 0, 0, max_new, greedy=True))
    assert len(codes) > 6 and [c.num_frames for c in chunks] == plan_sizes(len(codes), 2, 2, [])


def test_concurrent_streams_each_equal_their_solo_run(model_dir, synth):
    n = 32
    lengths = [3 + (i * 5) % 4 for i in range(n)]  # max_new_tokens 3..6: 2..5 frames
    seeds = [1000 + 17 * i for i in range(n)]
    plans = [(1, 15, [15]), (1, 2, [3]), (2, 3, [3])]  # [steady] = no ramp

    async def scenario():
        # A small prefill budget makes admissions take several steps while others decode.
        async with Running(model_dir, max_streams=n, prefill_budget=96, step_token_budget=0) as svc:
            registry = svc.metrics.server.registry

            def batches() -> tuple[float, float]:  # steps so far and their rows (the warm-up's steps too)
                return tuple(registry.get_sample_value(f"omni_talker_batch_size_{x}") for x in ("count", "sum"))

            warm_count, warm_sum = batches()
            requests = [generate_request(synth, i, seeds[i], lengths[i], plans[i % 3]) for i in range(n)]
            results = await asyncio.gather(*(collect(svc.stub, r) for r in requests))
            await svc.wait_idle()
            batch_count, batch_sum = batches()
            return results, (batch_sum - warm_sum) / (batch_count - warm_count)

    results, mean_batch = asyncio.run(scenario())
    assert mean_batch > 8  # the streams really ran together
    for i, (codes, chunks, _) in enumerate(results):
        np.testing.assert_array_equal(codes, solo(synth, i, seeds[i], lengths[i]), err_msg=f"stream {i}")
        assert [c.num_frames for c in chunks] == plan_sizes(len(codes), *plans[i % 3])


# A long-running request: seed and prompt chosen so it does not stop at EOS before 100 frames.
LONG = dict(i=1, seed=5, max_new=100)


def long_request(synth):
    return generate_request(synth, LONG["i"], LONG["seed"], LONG["max_new"])


def test_cancel_mid_stream_frees_the_slot_and_the_next_request_is_unaffected(model_dir, synth):
    async def scenario():
        async with Running(model_dir, max_streams=2) as svc:
            call = svc.stub.Generate(long_request(synth))
            received = 0
            async for message in call:
                received += message.chunk.num_frames
                if received >= 3:
                    break
            assert (await svc.load()).active_streams == 1
            call.cancel()
            await svc.wait_idle()
            after = await collect(svc.stub, generate_request(synth, 2, 77, 9))
            await svc.wait_idle()
            return after, svc.outcome("cancelled")

    (codes, _, _), cancelled = asyncio.run(scenario())
    assert cancelled == 1
    np.testing.assert_array_equal(codes, solo(synth, 2, 77, 9))


def test_deadline_ends_the_stream_and_frees_the_slot(model_dir, synth):
    async def scenario():
        async with Running(model_dir, max_streams=1) as svc:
            frames = 0
            with pytest.raises(grpc.aio.AioRpcError) as error:
                async for message in svc.stub.Generate(long_request(synth), timeout=0.6):
                    frames += message.chunk.num_frames
            await svc.wait_idle()
            return error.value.code(), frames, svc.outcome("deadline"), svc.outcome("cancelled")

    # The stream was under way when its deadline came (~1.8 s for the whole of it on a 2-core CPU, 45 ms to the first
    # chunk), so the talker had the request and counts its end as the deadline, not as a client's cancel.
    code, frames, deadline, cancelled = asyncio.run(scenario())
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 0 < frames < LONG["max_new"] - 1
    assert (deadline, cancelled) == (1, 0)


def test_a_cancel_close_to_the_deadline_counts_as_the_deadline():
    # The client's deadline passes before ours (ours counts from the call's arrival): its cancel comes a little early.
    assert [cancel_reason(t) for t in (None, 5.0, DEADLINE_SLACK_S + 0.01)] == ["cancelled"] * 3
    assert [cancel_reason(t) for t in (0.0, 0.03, DEADLINE_SLACK_S)] == ["deadline"] * 3


def test_full_queue_is_resource_exhausted_with_a_retry_hint(model_dir, synth):
    async def scenario():
        async with Running(model_dir, max_streams=1, max_queue=1, retry_after_s=0.25) as svc:
            first = svc.stub.Generate(long_request(synth))
            await first.read()  # the first chunk: it holds the only slot
            queued = asyncio.ensure_future(collect(svc.stub, generate_request(synth, 3, 9, 6)))
            await svc.wait_for(lambda load: load.queue_depth == 1, "one request queued")
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await collect(svc.stub, generate_request(synth, 4, 9, 6))
            load = await svc.load()
            first.cancel()
            codes, _, _ = await queued
            await svc.wait_idle()
            return error.value, load, codes

    error, load, codes = asyncio.run(scenario())
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry after 0.25 s" in error.details()
    assert ("retry-after-ms", "250") in tuple(error.trailing_metadata())
    assert (load.active_streams, load.capacity, load.queue_depth, load.queue_capacity) == (1, 1, 1, 1)
    np.testing.assert_array_equal(codes, solo(synth, 3, 9, 6))  # the queued request ran once the slot freed


def malformed_cases(synth) -> list[tuple[str, grpc.StatusCode, str, object]]:
    """(name, status, words in the message, mutation of a valid request)."""

    def set_ids(field, index, value):
        def mutate(r):
            getattr(r.prompt, field)[index] = value

        return mutate

    def sampling(head, field, value):
        return lambda r: setattr(getattr(r, head), field, value)

    def oversized(r):
        r.prompt.text_ids.extend([1] * CONTEXT)
        r.prompt.codec_ids.extend([1] * CONTEXT)

    def unequal(r):
        r.prompt.codec_ids.append(1)

    def empty(r):
        del r.prompt.text_ids[:]
        del r.prompt.codec_ids[:]

    def ref_codes_without_positions(r):
        r.prompt.ref_codes = pack_codes(np.zeros((2, 16), np.int64))
        r.prompt.ref_code_frames = 2

    def wrong_model(r):
        r.expected_model.protocol_version = common_pb2.PROTOCOL_VERSION_1
        r.expected_model.model_family = "qwen3-tts-12hz"
        r.expected_model.codec_id = "another codec"

    invalid, unimplemented = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED
    return [
        ("text id too large", invalid, "prompt.text_ids[0]", set_ids("text_ids", 0, 10**9)),
        ("negative text id", invalid, "prompt.text_ids[2]", set_ids("text_ids", 2, -2)),
        ("codec id too large", invalid, "prompt.codec_ids[1]", set_ids("codec_ids", 1, 3072)),
        ("unknown sentinel", invalid, "prompt.codec_ids[0]", set_ids("codec_ids", 0, -4)),
        ("trailing id", invalid, "trailing_text_ids", lambda r: r.prompt.trailing_text_ids.append(-1)),
        ("unequal tracks", invalid, "codec_ids", unequal),
        ("empty prompt", invalid, "empty", empty),
        ("x-vector slot without vector", invalid, "x_vector", set_ids("codec_ids", 3, -2)),
        ("ref codes without positions", invalid, "ref_code_frames", ref_codes_without_positions),
        ("temperature 0", invalid, "temperature", sampling("sampling", "temperature", 0.0)),
        ("temperature nan", invalid, "temperature", sampling("sampling", "temperature", float("nan"))),
        ("top_p above 1", invalid, "top_p", sampling("sampling", "top_p", 1.5)),
        ("subtalker top_p 0", invalid, "top_p", sampling("subtalker_sampling", "top_p", 0.0)),
        ("negative penalty", invalid, "repetition_penalty", sampling("sampling", "repetition_penalty", -1.0)),
        ("subtalker penalty", invalid, "code predictor", sampling("subtalker_sampling", "repetition_penalty", 1.2)),
        ("max_new_tokens 1", invalid, "max_new_tokens", lambda r: setattr(r, "max_new_tokens", 1)),
        ("over the context", invalid, "context limit", lambda r: setattr(r, "max_new_tokens", CONTEXT - 5)),
        ("oversized prompt", invalid, "context limit", oversized),
        ("huge chunk", invalid, "chunk_frames", lambda r: setattr(r.chunk_plan, "chunk_frames", 10**6)),
        ("zero ramp size", invalid, "ramp", lambda r: r.chunk_plan.ramp.append(0)),
        ("registered voice", unimplemented, "x_vector", lambda r: setattr(r.prompt.voice, "name", "alice")),
        ("other model", grpc.StatusCode.FAILED_PRECONDITION, "codec id", wrong_model),
    ]


def test_malformed_requests_are_refused_with_clear_errors(model_dir, synth):
    cases = malformed_cases(synth)

    async def scenario():
        async with Running(model_dir) as svc:
            outcomes = []
            for name, _, _, mutate in cases:
                request = generate_request(synth, 0, 1, 6)
                mutate(request)
                try:
                    await collect(svc.stub, request)
                    outcomes.append((name, None, ""))
                except grpc.aio.AioRpcError as e:
                    outcomes.append((name, e.code(), e.details()))
            good = await collect(svc.stub, generate_request(synth, 0, 1, 6))
            load = await svc.load()
            return outcomes, good, load, svc.outcome("invalid_argument")

    outcomes, (codes, _, _), load, invalid = asyncio.run(scenario())
    for (name, status, words, _), (_, code, details) in zip(cases, outcomes, strict=True):
        assert code == status, f"{name}: {code} {details}"
        assert words in details, f"{name}: {details!r} does not mention {words!r}"
    assert invalid == sum(status == grpc.StatusCode.INVALID_ARGUMENT for _, status, _, _ in cases)
    assert load.active_streams == 0 and load.queue_depth == 0
    np.testing.assert_array_equal(codes, solo(synth, 0, 1, 6))


def test_voice_clone_prompt_round_trips_the_wire_and_equals_synth(tiny_model_dir):
    """Base ICL: the x-vector slot (-2) and ref-code rows (-3) survive the wire and give synth's codes."""
    model_dir = tiny_model_dir("base")
    synth = Synthesizer(model_dir)
    rng = np.random.default_rng(3)
    hidden = synth.model.config.talker.hidden_size
    request = SpeechRequest(
        text="Clone this voice.",
        ref_text="A reference.",
        ref_codes=torch.from_numpy(rng.integers(0, 2048, (5, 16))),
        x_vector=torch.from_numpy(rng.standard_normal(hidden).astype(np.float32)),
    )
    prompt = synth.builder.build(request)
    wire = prompt_to_proto(prompt)
    assert list(wire.codec_ids).count(-3) == 5 and list(wire.codec_ids).count(-2) == 1
    back = prompt_from_proto(wire, synth.model.config, CONTEXT)
    torch.testing.assert_close(synth.runner_for(1, CONTEXT).embed_prompt(back), synth.runner.embed_prompt(prompt))

    async def scenario():
        async with Running(model_dir) as svc:
            message = talker_pb2.GenerateRequest(prompt=wire, max_new_tokens=12, seed=4)
            return await collect(svc.stub, message)

    codes, _, _ = asyncio.run(scenario())
    np.testing.assert_array_equal(codes, synth.synthesize([request], [SynthesisOptions(seed=4, max_new_tokens=12)])[0])


def test_omni_talker_command_serves_and_drains_on_sigterm(model_dir, synth):
    port = free_port()
    env = {**os.environ, "OMNI_TALKER_MAX_STREAMS": "3", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "omni.cli", "talker", "--model", str(model_dir), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--max-context", str(CONTEXT), "--grace-s", "1", "--metrics-port", "-1"]
    cmd += ["--profile", "qwen3-tts-0.6b-cpu"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:

        async def check():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await wait_serving(channel, "omni.talker.v1.TalkerService", proc)
                stub = talker_pb2_grpc.TalkerServiceStub(channel)
                load = (await stub.GetLoad(talker_pb2.GetLoadRequest())).load
                info = await stub.GetModelInfo(talker_pb2.GetModelInfoRequest())
                # SIGTERM with a stream in flight: it ends with a summary (finished, or aborted after the grace).
                call = stub.Generate(long_request(synth))
                assert (await call.read()).WhichOneof("kind") == "chunk"
                proc.send_signal(signal.SIGTERM)
                rest = []
                while (message := await call.read()) is not grpc.aio.EOF:
                    rest.append(message)
                return load.capacity, info.max_context, rest[-1]

        capacity, context, final = asyncio.run(check())
        assert (capacity, context) == (3, CONTEXT)  # capacity from the environment, context from the flag
        assert final.WhichOneof("kind") == "summary"
        assert final.summary.stop_reason in (talker_pb2.STOP_REASON_ABORTED, talker_pb2.STOP_REASON_MAX_NEW_TOKENS)
        assert proc.wait(timeout=60) == 0
        assert '"msg": "talker stopped"' in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ignore_eos_blocks_eos_through_the_last_draw():
    from types import SimpleNamespace

    from omni.services.talker.requests import sampling_from_proto

    generation = SimpleNamespace(min_new_tokens=2)
    free = sampling_from_proto(talker_pb2.GenerateRequest(seed=1), generation, 40)
    forced = sampling_from_proto(talker_pb2.GenerateRequest(seed=1, ignore_eos=True), generation, 40)
    assert (free.min_new_tokens, free.max_new_tokens) == (2, 40)
    assert (forced.min_new_tokens, forced.max_new_tokens) == (40, 40)  # EOS is -inf for every draw


def test_the_warm_up_prompts_reach_every_skinny_kernel_a_prompt_embedding_can_take(model_dir):
    """A prompt's embedding runs eagerly, its text projection (the 1.7B's [2048, 2048] weights, the 0.6B's [2048,
    2048] and [1024, 2048]) through the skinny kernels up to 32 rows: on a GPU Triton compiles a dot kernel per padded
    row count and per whether the rows divide by 16 (run 209: two compiled in the first requests, ~250 ms each). The
    warm-up's prompts must reach each such kernel on every weight, so none is compiled for a client's prompt."""
    from omni.kernels.skinny_linear import dot_from_for, dot_rows_for

    def variant(rows: int) -> tuple[int, bool]:  # the dot kernel's ROWS_PAD and the rows' divisibility by 16
        return max(16, 1 << (rows - 1).bit_length()), rows % 16 == 0

    async def warmed_rows() -> list[int]:
        service, parts = build_talker_service(TalkerConfig(model=str(model_dir), device="cpu", max_streams=2, port=0))
        runner, rows = parts.engine.runner, []
        embed = runner.embed_prompts
        runner.embed_prompts = lambda prompts: rows.append(sum(map(len, prompts))) or embed(prompts)
        parts.engine.start()
        try:
            await warm_up(parts.engine)
        finally:
            await parts.engine.stop()
        return rows

    rows = asyncio.run(warmed_rows())
    for n, k in ((2048, 2048), (1024, 2048)):
        weight = torch.empty(n, k)
        dot = range(dot_from_for(weight), dot_rows_for(weight) + 1)
        assert {variant(r) for r in rows if r in dot} == {variant(r) for r in dot} == {
            (16, False), (16, True), (32, False), (32, True)}, (n, rows)  # fmt: skip


def test_the_measured_talker_kernels_are_on_by_default_and_can_be_turned_off(model_dir):
    """Every talker kernel setting won its GPU A/B (docs/benchmarks.md): sampler_kernel (run 16), short_pass_kernel (run
    83), kv_write_kernel and fused_add_norm (run 86), norm_rope_write_kernel (run 109), skinny_linear (run 154),
    fused_draws (run 155), skinny_linear_dot (run 160), skinny_linear_by_shape and skinny_linear_dot_32 (runs 163-164),
    projected_lookups and lookup_kernels (runs 190-191), step_input_kernel (runs 193-194), step_rope_tables (runs
    195-196). Each can be turned off from the environment; on CPU none reaches the runner's caches (the PyTorch paths)
    and the lookups and the step's reads stay PyTorch's, but the projected tables (a model identity, not a kernel) are
    made on any device."""
    from omni.services.common.config import load_config

    settings = ("sampler_kernel", "short_pass_kernel", "kv_write_kernel", "fused_add_norm", "norm_rope_write_kernel",
                "skinny_linear", "fused_draws", "skinny_linear_dot", "skinny_linear_by_shape",
                "skinny_linear_dot_32", "projected_lookups", "lookup_kernels", "step_input_kernel",
                "step_rope_tables")  # fmt: skip
    assert all(getattr(TalkerConfig(), name) for name in settings)
    offs = ("0", "false", "no", "off", "0", "off", "false", "0", "no", "0", "off", "false", "no", "0")
    env = {f"OMNI_TALKER_{name.upper()}": value for name, value in zip(settings, offs, strict=True)}
    off = load_config(TalkerConfig, "talker", env=env)
    assert not any(getattr(off, name) for name in settings)

    async def build(config: TalkerConfig):  # the gRPC server is made on the event loop
        return build_talker_service(config)[1]

    runner = asyncio.run(build(TalkerConfig(model=str(model_dir), device="cpu", max_streams=2, port=0))).engine.runner
    kernels = runner.cache.kernels
    assert not (kernels.write or kernels.norm_rope_write or kernels.attention)
    assert runner.frame_tables is None and runner.step_inputs is None and runner.rope_tables is None  # CUDA only
    assert runner.projected is not None  # model_dir's tiny talker has a projection
    config = dataclasses.replace(off, model=str(model_dir), device="cpu", max_streams=2, port=0)
    assert asyncio.run(build(config)).engine.runner.projected is None
