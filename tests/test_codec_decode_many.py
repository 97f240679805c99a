"""The codec's DecodeMany over real gRPC on loopback: many streams in one call, each decoded as Decode would (its
PCM equals the whole-utterance decode), per-stream errors that leave the call and its other streams going, slots
freed by a stream's cancel and by the call's, the shutdown drain, and the gateway's client of it (`shared_calls`),
which waits for audio before sending past the codec's backlog."""

import asyncio

import grpc
import numpy as np
from omni.services.common.packing import decode_pcm
from omni.services.gateway.shared_calls import SharedCall, StreamFailed

from omni.proto import codec_pb2, common_pb2
from tests import test_codec_service
from tests.many_calls import read_events
from tests.test_codec_service import (
    F32,
    S16,
    Running,
    assert_rows_of_chunks,
    assert_same_audio,
    chunk_message,
    expected_audio,
    open_message,
    plan_sizes,
    random_codes,
)

model_dir, decoder = test_codec_service.model_dir, test_codec_service.decoder  # the same fixtures
PLANS = [[1], [1, 2, 4], [2], [3, 1], [15]]


def opening(svc, ref=None, fmt=S16, request_id="m") -> codec_pb2.StreamRequest:
    return open_message(svc.identity, ref, fmt, request_id).open


def item(stream_id: int, **kind) -> codec_pb2.StreamRequest:
    return codec_pb2.StreamRequest(stream_id=stream_id, **kind)


def chunk_item(stream_id: int, codes: np.ndarray, start: int, last: bool) -> codec_pb2.StreamRequest:
    return item(stream_id, chunk=chunk_message(codes, start, last).chunk)


def kinds(events: list[codec_pb2.StreamEvent]) -> list[str]:
    return [e.WhichOneof("kind") for e in events]


def test_many_streams_in_one_call_equal_whole_utterance_decode(model_dir, decoder):
    rng = np.random.default_rng(10)
    streams = []
    for i in range(12):
        ref = random_codes(rng, int(rng.integers(1, 4))) if i % 4 == 0 else None
        streams.append((random_codes(rng, int(rng.integers(2, 8))), ref, PLANS[i % len(PLANS)], (S16, F32)[i % 2]))
    want = expected_audio(decoder, [(codes, ref) for codes, ref, _, _ in streams])

    async def requests(svc):
        # All streams open in one message, then each round sends every stream's next chunk in one message.
        yield codec_pb2.DecodeManyRequest(
            items=[item(i, open=opening(svc, ref, fmt, f"s{i}")) for i, (_, ref, _, fmt) in enumerate(streams)]
        )
        queues = []
        for codes, _, plan, _ in streams:
            sizes, start, chunks = plan_sizes(len(codes), plan), 0, []
            for k, n in enumerate(sizes):
                chunks.append((codes[start : start + n], start, k == len(sizes) - 1))
                start += n
            queues.append(chunks)
        while any(queues):
            await asyncio.sleep(0.005)
            yield codec_pb2.DecodeManyRequest(items=[chunk_item(i, *q.pop(0)) for i, q in enumerate(queues) if q])

    async def scenario():
        async with Running(model_dir, max_streams=16) as svc:
            call = svc.stub.DecodeMany(requests(svc))
            events, sizes = await read_events(call)
            assert await call.code() == grpc.StatusCode.OK  # every stream ended and the client half-closed
            await svc.wait_idle()
            return events, sizes

    events, sizes = asyncio.run(scenario())
    assert sorted(events) == list(range(len(streams)))
    assert max(sizes) > 1  # some response carried several streams' events
    for i, (codes, _, plan, fmt) in enumerate(streams):
        got = events[i]
        assert kinds(got)[0] == "started" and kinds(got)[-1] == "summary" and set(kinds(got)[1:-1]) == {"audio"}
        assert got[0].started.sample_rate == 24000 and got[0].started.max_backlog_frames == 500
        audio = [e.audio for e in got[1:-1]]
        assert_rows_of_chunks([a.num_frames for a in audio], plan_sizes(len(codes), plan))
        assert [a.first_frame_index for a in audio] == list(np.cumsum([0] + [a.num_frames for a in audio[:-1]]))
        assert audio[-1].last and not any(a.last for a in audio[:-1])
        summary = got[-1].summary
        assert summary.num_frames == len(codes) and summary.num_chunks == len(audio)
        assert_same_audio(np.concatenate([decode_pcm(a.pcm, fmt) for a in audio]), want[i], fmt)


def test_a_bad_stream_gets_its_error_and_the_call_goes_on(model_dir, decoder):
    rng = np.random.default_rng(11)
    good, codes = random_codes(rng, 5), random_codes(rng, 2)
    (want,) = expected_audio(decoder, [(good, None)])
    invalid, out_of_range = grpc.StatusCode.INVALID_ARGUMENT.value[0], codes.copy()
    out_of_range[1, 3] = 2048

    async def scenario():
        async with Running(model_dir, max_streams=6, max_chunk_frames=2, max_backlog_frames=2) as svc:
            wrong_model = common_pb2.ModelIdentity()
            wrong_model.CopyFrom(svc.identity)
            wrong_model.codec_id = "qwen3-tts-tokenizer-12hz:0000000000000000"
            call = svc.stub.DecodeMany()
            reading = asyncio.create_task(read_events(call))
            first = [
                item(1, open=opening(svc, fmt=F32)),  # the good stream, fed below
                item(2, open=codec_pb2.DecodeOpen(model=wrong_model)),
                chunk_item(3, codes, 0, False),  # never opened
                item(4, open=opening(svc)),
                chunk_item(4, out_of_range, 0, False),
                item(5, open=opening(svc)),
                chunk_item(5, codes, 0, True),
                chunk_item(5, codes, 2, False),  # after the last chunk
                item(6, open=opening(svc)),
                item(6, open=opening(svc)),  # opened twice
                item(7, open=opening(svc)),
                item(7),  # no content
                item(8, open=opening(svc)),
                *(chunk_item(8, codes, 2 * k, False) for k in range(3)),  # 6 frames sent at once > backlog of 2
            ]
            await call.write(codec_pb2.DecodeManyRequest(items=first))
            for start in range(0, 5, 2):
                last = start + 2 >= 5
                await call.write(
                    codec_pb2.DecodeManyRequest(items=[chunk_item(1, good[start : start + 2], start, last)])
                )
                # The client keeps within the backlog: the next chunk goes once this one is decoded.
                while not last and not any(s.frames_done > start for s in svc.engine.streams.values()):
                    await asyncio.sleep(0.005)
            await call.done_writing()
            events, _ = await reading
            assert await call.code() == grpc.StatusCode.OK
            await svc.wait_idle()
            return events, svc.metrics

    events, metrics = asyncio.run(scenario())
    assert all(kinds(events[i])[-1] == "error" for i in range(2, 9)), {i: kinds(events[i]) for i in events}
    # A stream's first error says why it ended (stream 8's later chunk then finds it closed: "not open").
    errors = {i: next(e.error for e in events[i] if e.WhichOneof("kind") == "error") for i in range(2, 9)}
    assert errors[2].code == grpc.StatusCode.FAILED_PRECONDITION.value[0] and "codec id" in errors[2].message
    assert errors[3].code == invalid and "not open" in errors[3].message
    assert errors[4].code == invalid and "[0, 2048)" in errors[4].message
    assert errors[5].code == invalid and "after the last chunk" in errors[5].message
    assert errors[6].code == invalid and "already open" in errors[6].message
    assert errors[7].code == invalid and "no content" in errors[7].message
    assert errors[8].code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] and "max_backlog_frames" in errors[8].message
    assert kinds(events[1]) == ["started", *["audio"] * (len(events[1]) - 2), "summary"]
    pcm = np.concatenate([np.frombuffer(e.audio.pcm, "<f4") for e in events[1][1:-1]])
    assert_same_audio(pcm, want, F32)
    counts = {o: metrics.server.registry.get_sample_value("omni_codec_streams_total", {"outcome": o}) for o in
              ("ok", "invalid_argument", "failed_precondition", "resource_exhausted")}  # fmt: skip
    # The never-opened stream 3 is not counted; the good stream is the one that ended well.
    assert counts == {"ok": 1.0, "invalid_argument": 4.0, "failed_precondition": 1.0, "resource_exhausted": 1.0}


def test_cancel_frees_a_slot_and_a_cancelled_call_frees_them_all(model_dir):
    async def scenario():
        async with Running(model_dir, max_streams=3) as svc:
            call = svc.stub.DecodeMany()
            await call.write(codec_pb2.DecodeManyRequest(items=[item(i, open=opening(svc)) for i in range(3)]))
            started = await call.read()
            assert [e.WhichOneof("kind") for e in started.events] == ["started"] * 3
            assert await svc.active_streams() == 3
            # Full: a fourth stream is refused, on its own.
            await call.write(codec_pb2.DecodeManyRequest(items=[item(9, open=opening(svc))]))
            refused = (await call.read()).events
            assert refused[0].stream_id == 9 and refused[0].error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            await call.write(codec_pb2.DecodeManyRequest(items=[item(0, cancel=True)]))
            while await svc.active_streams() != 2:
                await asyncio.sleep(0.01)
            call.cancel()
            await svc.wait_idle()
            return svc.metrics

    metrics = asyncio.run(scenario())
    assert metrics.server.registry.get_sample_value("omni_codec_streams_total", {"outcome": "cancelled"}) == 3


def test_shutdown_ends_each_shared_call_once_its_streams_have(model_dir):
    codes = random_codes(np.random.default_rng(12), 2)

    async def scenario():
        async with Running(model_dir, max_streams=4) as svc:
            idle, busy = svc.stub.DecodeMany(), svc.stub.DecodeMany()
            await busy.write(codec_pb2.DecodeManyRequest(items=[item(1, open=opening(svc))]))
            assert (await busy.read()).events[0].WhichOneof("kind") == "started"
            await idle.write(codec_pb2.DecodeManyRequest(items=[]))
            stopping = asyncio.create_task(svc.service.stop(30.0))  # a long grace: the calls must end by themselves
            assert await idle.read() is grpc.aio.EOF and await idle.code() == grpc.StatusCode.OK
            # The busy call refuses new streams, and finishes the one it has.
            await busy.write(
                codec_pb2.DecodeManyRequest(items=[item(2, open=opening(svc)), chunk_item(1, codes, 0, True)])
            )
            events, _ = await read_events(busy)
            await stopping
            return events, await busy.code(), stopping

    events, code, _ = asyncio.run(scenario())
    assert code == grpc.StatusCode.OK
    assert kinds(events[2]) == ["error"] and events[2][0].error.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert kinds(events[1]) == ["audio", "summary"] and events[1][1].summary.num_frames == 2


def test_the_gateway_client_waits_for_audio_before_exceeding_the_backlog(model_dir, decoder):
    codes = random_codes(np.random.default_rng(13), 9)
    (want,) = expected_audio(decoder, [(codes, None)])

    async def scenario():
        async with Running(model_dir, max_streams=2, max_chunk_frames=2, max_backlog_frames=2) as svc:
            shared = SharedCall.to_codec(svc.stub)
            try:
                stream = shared.open_codec(opening(svc, fmt=F32))
                assert (await stream.started()).max_backlog_frames == 2

                async def feed():  # as fast as it may: each write past the first waits for audio
                    for start in range(0, 9, 2):
                        chunk = chunk_message(codes[start : start + 2], start, start + 2 >= 9).chunk
                        await stream.write_chunk(chunk)

                feeding = asyncio.create_task(feed())
                audio = []
                while (event := await stream.read()).WhichOneof("kind") == "audio":
                    audio.append(event.audio)
                await feeding
                assert event.summary.num_frames == 9
                other = shared.open_codec(opening(svc))  # the same call serves the next stream
                await other.started()
                other.cancel()
                await svc.wait_idle()
                return audio
            finally:
                await shared.close()

    audio = asyncio.run(scenario())
    assert_same_audio(np.concatenate([np.frombuffer(a.pcm, "<f4") for a in audio]), want, F32)


def test_the_gateway_client_fails_every_stream_when_the_call_ends(model_dir):
    async def scenario():
        async with Running(model_dir, max_streams=2) as svc:
            shared = SharedCall.to_codec(svc.stub)
            stream = shared.open_codec(opening(svc))
            await stream.started()
            await svc.service.stop(0)  # the codec goes away under the call
            try:
                await stream.read()
            except StreamFailed as e:
                failure = e
            assert not shared.alive
            late = shared.open_codec(opening(svc))
            try:
                await late.started()
            except StreamFailed as e:
                late_failure = e
            await shared.close()
            return failure, late_failure

    failure, late = asyncio.run(scenario())
    assert failure.code == grpc.StatusCode.UNAVAILABLE or failure.code == grpc.StatusCode.CANCELLED, failure
    assert late is failure  # a stream opened on a dead call fails at once with the call's status
