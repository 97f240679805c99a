"""The talker's GenerateMany over real gRPC on loopback: many generations in one call, each with the codes it has run
alone (seeded sampling is per slot, so sharing a call and a batch changes nothing), per-stream refusals (a full
queue with its retry hint, malformed requests) that leave the call and its other streams going, cancellation of a
stream and of the call, the shutdown drain, and the gateway's client of it (`shared_calls.TalkerStream`)."""

import asyncio
import time

import grpc
import numpy as np
from omni.services.common.packing import unpack_codes
from omni.services.gateway.shared_calls import SharedCall, StreamFailed

from omni.proto import talker_pb2
from tests import test_talker_service
from tests.many_calls import read_events
from tests.test_talker_service import Running, generate_request, long_request, malformed_cases, solo

model_dir, synth = test_talker_service.model_dir, test_talker_service.synth  # the same fixtures


def start(stream_id: int, request: talker_pb2.GenerateRequest) -> talker_pb2.GenerateItem:
    return talker_pb2.GenerateItem(stream_id=stream_id, start=request)


def codes_of(events: list[talker_pb2.GenerateEvent]) -> np.ndarray:
    """The stream's codes, its chunks checked for order and framing, and its summary for the totals."""
    kinds = [e.WhichOneof("kind") for e in events]
    assert kinds[-1] == "summary" and set(kinds[:-1]) == {"chunk"}, kinds
    chunks = [e.chunk for e in events[:-1]]
    assert [c.first_frame_index for c in chunks] == [sum(c.num_frames for c in chunks[:k]) for k in range(len(chunks))]
    assert chunks[0].first and chunks[-1].last and not any(c.last for c in chunks[:-1])
    codes = np.concatenate([unpack_codes(c.codes, c.num_frames, c.num_codebooks) for c in chunks])
    summary = events[-1].summary
    assert summary.num_frames == len(codes) and summary.num_chunks == len(chunks)
    return codes


def test_many_generations_in_one_call_each_equal_their_solo_run(model_dir, synth):
    jobs = [(i, 100 + i, 5 + i % 4) for i in range(6)]  # (text/speaker, seed, max_new_tokens)

    async def scenario():
        async with Running(model_dir, max_streams=4, max_queue=8) as svc:
            before = svc.outcome("max_new_tokens") + svc.outcome("eos")  # the warm-up's
            call = svc.stub.GenerateMany()
            # Two messages: a request per stream id; more requests than slots, so some wait in the queue.
            await call.write(
                talker_pb2.GenerateManyRequest(
                    items=[start(k, generate_request(synth, *j)) for k, j in enumerate(jobs[:4])]
                )
            )
            await call.write(
                talker_pb2.GenerateManyRequest(
                    items=[start(k + 4, generate_request(synth, *j)) for k, j in enumerate(jobs[4:])]
                )
            )
            await call.done_writing()
            events, sizes = await read_events(call)
            assert await call.code() == grpc.StatusCode.OK
            await svc.wait_idle()
            return events, sizes, svc.outcome("max_new_tokens") + svc.outcome("eos") - before

    events, sizes, finished = asyncio.run(scenario())
    assert sorted(events) == list(range(len(jobs))) and finished == len(jobs)
    assert max(sizes) > 1  # a talker step's chunks of several streams travelled in one message
    for k, (i, seed, max_new) in enumerate(jobs):
        np.testing.assert_array_equal(codes_of(events[k]), solo(synth, i, seed, max_new))


def test_refusals_are_stream_errors_and_the_call_goes_on(model_dir, synth):
    cases = malformed_cases(synth)

    async def scenario():
        async with Running(model_dir, max_streams=1, max_queue=1, retry_after_s=0.25) as svc:
            registry = svc.metrics.server.registry
            first_chunks = registry.get_sample_value("omni_talker_time_to_first_chunk_ms_count")
            call = svc.stub.GenerateMany()
            reading = asyncio.create_task(read_events(call))
            items = [start(0, long_request(synth))]  # holds the only slot
            for k, (_, _, _, mutate) in enumerate(cases):
                request = generate_request(synth, 1, 3, 6)
                mutate(request)
                items.append(start(100 + k, request))
            items += [start(1, generate_request(synth, 3, 9, 6))]  # queued behind stream 0
            items += [start(2, generate_request(synth, 4, 9, 6))]  # the queue is full
            items += [start(1, generate_request(synth, 3, 9, 6))]  # stream 1 started twice
            items += [talker_pb2.GenerateItem(stream_id=3, cancel=True)]  # a cancel of nothing: ignored
            items += [talker_pb2.GenerateItem(stream_id=4)]  # no content, no such stream
            await call.write(talker_pb2.GenerateManyRequest(items=items))
            await svc.wait_for(lambda load: load.active_streams == 1, "stream 0 decoding")
            queued = start(5, generate_request(synth, 3, 9, 6))  # the same request again, after the refusals
            await call.write(talker_pb2.GenerateManyRequest(items=[queued]))
            # Cancel stream 0 once its first chunk is out (CPU steps can be slow: a fixed sleep raced it).
            for _ in range(1000):
                if registry.get_sample_value("omni_talker_time_to_first_chunk_ms_count") > first_chunks:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            await call.write(talker_pb2.GenerateManyRequest(items=[talker_pb2.GenerateItem(stream_id=0, cancel=True)]))
            await call.done_writing()
            events, _ = await reading
            await svc.wait_idle()
            return events

    events = asyncio.run(scenario())
    for k, (name, code, words, _) in enumerate(cases):
        (event,) = events[100 + k]
        assert event.error.code == code.value[0] and words in event.error.message, (name, event)
    # Stream 1 was queued; starting it again failed it (as a stream) with INVALID_ARGUMENT.
    assert events[1][-1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "already started" in events[1][-1].error.message
    (full,) = events[2]
    assert full.error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] and full.error.retry_after_ms == 250
    assert 3 not in events and "not started" in events[4][0].error.message
    # Stream 0 was cancelled: its chunks stop without a summary; stream 5 then ran as it would alone.
    assert {e.WhichOneof("kind") for e in events[0]} == {"chunk"}
    np.testing.assert_array_equal(codes_of(events[5]), solo(synth, 3, 9, 6))


def test_a_cancelled_call_frees_every_slot_and_shutdown_ends_an_idle_call(model_dir, synth):
    async def scenario():
        async with Running(model_dir, max_streams=2, max_queue=2) as svc:
            call = svc.stub.GenerateMany()
            items = [start(k, long_request(synth)) for k in range(3)]
            await call.write(talker_pb2.GenerateManyRequest(items=items))
            await svc.wait_for(lambda load: load.active_streams == 2 and load.queue_depth == 1, "two run, one waits")
            assert (await call.read()).events[0].WhichOneof("kind") == "chunk"
            call.cancel()
            await svc.wait_idle()
            cancelled = svc.outcome("cancelled")
            idle = svc.stub.GenerateMany()
            # An item for no stream: its error event says the call's handler runs. Without that round trip the
            # shutdown could begin before the server had taken the call, and gRPC cancelled it (seen once in CI).
            await idle.write(talker_pb2.GenerateManyRequest(items=[talker_pb2.GenerateItem(stream_id=9)]))
            assert "not started" in (await idle.read()).events[0].error.message
            await svc.service.stop(30.0)  # a long grace: the idle call must end by itself
            return cancelled, await idle.read(), await idle.code()

    cancelled, last, code = asyncio.run(scenario())
    assert cancelled == 3 and last is grpc.aio.EOF and code == grpc.StatusCode.OK


def test_the_gateway_client_reads_its_stream_and_a_refusal(model_dir, synth):
    async def scenario():
        async with Running(model_dir, max_streams=1, max_queue=0, retry_after_s=0.5) as svc:
            writes: list[float] = []
            shared = SharedCall.to_talker(svc.stub, on_write=writes.append)
            try:
                opened = time.monotonic()
                first = shared.open_talker(generate_request(synth, 2, 7, 6))
                events = [await first.read()]
                # When its request left (the gateway's part of the way to the talker, logged as talker_sent_ms).
                assert first.sent_at is not None and opened <= first.sent_at <= time.monotonic()
                refused = shared.open_talker(generate_request(synth, 1, 7, 6))
                try:
                    await refused.read()
                except StreamFailed as e:
                    refusal = e
                while events[-1].WhichOneof("kind") != "summary":
                    events.append(await first.read())
                await svc.wait_idle()
                # Each write's seconds reach the observer (the gateway's backend_write histogram): the two starts.
                assert 1 <= len(writes) <= 2 and all(0 <= s < time.monotonic() - opened for s in writes), writes
                return events, refusal
            finally:
                await shared.close()

    events, refusal = asyncio.run(scenario())
    np.testing.assert_array_equal(codes_of(events), solo(synth, 2, 7, 6))
    assert refusal.code == grpc.StatusCode.RESOURCE_EXHAUSTED and refusal.retry_after_s == 0.5
