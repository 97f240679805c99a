"""The gateway's side of the many-stream calls: one codec DecodeMany and one talker GenerateMany call per replica,
shared by this worker's requests.

A request opens a stream (`CodecStream`, `TalkerStream`) on its replica's `SharedCall`. Its messages go into the
call's outbox, and one sender task writes whatever is waiting as one request message, so requests whose chunks are
ready together share a message. One receiver task reads the responses (a codec step's audio, a talker step's chunks,
for many streams) and hands each event to its stream's inbox. The service's event loop then handles a gRPC message
per batch instead of one per chunk in each direction, which is most of its cost per chunk (tools/profile_host.py).

A codec stream holds at most the codec's `max_backlog_frames` undecoded frames: `write_chunk` waits for audio to come
back before sending more (the per-stream flow control that Decode got from gRPC's). When a call ends or fails, every
stream on it gets `CallFailed` and the next request opens a new call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import grpc

from omni.proto import codec_pb2, common_pb2, talker_pb2

STATUS_BY_NUMBER = {status.value[0]: status for status in grpc.StatusCode}


class StreamFailed(Exception):
    """The service refused or ended one stream (an `error` event) with a gRPC status code, as a call of its own
    would have; `retry_after_s` comes with a full talker queue."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


class CallFailed(StreamFailed):
    """The shared call itself ended (the service went away, restarted or drained): every stream on it ended."""


def stream_failure(error: common_pb2.StreamError) -> StreamFailed:
    code = STATUS_BY_NUMBER.get(error.code, grpc.StatusCode.UNKNOWN)
    return StreamFailed(code, error.message, error.retry_after_ms / 1000 if error.retry_after_ms else None)


class SharedStream:
    """One request's stream on a shared call: `read()` returns its events, the last one its summary; `cancel()`
    drops it."""

    def __init__(self, call: SharedCall, stream_id: int) -> None:
        self.call = call
        self.stream_id = stream_id
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.failure: StreamFailed | None = None  # set when the service ended the stream with an error
        self.finished = False  # summary or failure received, or cancelled: nothing more to send
        # time.monotonic() when the sender took its first item for a write (the service cannot have it sooner)
        self.sent_at: float | None = None

    async def read(self):
        """The stream's next event; raises StreamFailed for an `error` (or the call's end)."""
        event = await self.inbox.get()
        if isinstance(event, StreamFailed):
            raise event
        return event

    def cancel(self) -> None:
        """Drop the stream (the request ended, failed or was disconnected): the service frees its slot at once."""
        if not self.finished:
            self.finished = True
            self.call.forget(self)
            self.call.send(self.stream_id, cancel=True)

    def receive(self, event) -> None:
        """Receiver task: one event for this stream (or the call's failure), in order."""
        kind = "failed" if isinstance(event, StreamFailed) else event.WhichOneof("kind")
        if kind == "error":
            event, kind = stream_failure(event.error), "failed"
        if kind in ("summary", "failed"):
            self.finished = True
            self.call.forget(self)
            if kind == "failed":
                self.failure = event
        self.on_event(kind, event)
        self.inbox.put_nowait(event)

    def on_event(self, kind: str, event) -> None:
        """What a kind of stream does on each event besides queueing it."""


class CodecStream(SharedStream):
    """A codec stream: `started()`, then `write_chunk()`s and `end()` from the talker's side while `read()` returns
    its `audio` events and finally its `summary`."""

    def __init__(self, call: SharedCall, stream_id: int) -> None:
        super().__init__(call, stream_id)
        self.max_backlog_frames = 0  # from `started`; 0: no limit
        self.frames_sent = 0
        self.frames_back = 0
        self.room = asyncio.Event()  # set when audio comes back (the backlog shrank) or the stream failed

    async def started(self) -> codec_pb2.DecodeStarted:
        """The codec's `started` event; StreamFailed when it refused the stream."""
        event = await self.read()
        if event.WhichOneof("kind") != "started":
            raise StreamFailed(grpc.StatusCode.INTERNAL, f"expected `started`, got {event.WhichOneof('kind')}")
        self.max_backlog_frames = event.started.max_backlog_frames
        return event.started

    async def write_chunk(self, chunk: common_pb2.CodecChunk) -> None:
        """Send a chunk once the codec has room for it in this stream's backlog; StreamFailed if the stream has
        already failed (the reader of `read()` gets the same failure)."""
        limit = self.max_backlog_frames
        while limit and self.failure is None and self.frames_sent - self.frames_back + chunk.num_frames > limit:
            self.room.clear()
            await self.room.wait()
        if self.failure is not None:
            raise self.failure
        self.frames_sent += chunk.num_frames
        self.call.send(self.stream_id, chunk=chunk)

    def end(self) -> None:
        """The input ended without a `last` chunk: the codec ends the stream after what was sent."""
        if not self.finished:
            self.call.send(self.stream_id, end=True)

    def on_event(self, kind: str, event) -> None:
        if kind == "audio":
            self.frames_back += event.audio.num_frames
        if kind in ("audio", "failed"):
            self.room.set()


class TalkerStream(SharedStream):
    """A talker stream: `read()` returns its `chunk` events and finally its `summary`."""


class SharedCall:
    """One many-stream call to a replica with its sender and receiver tasks (see the module docstring)."""

    def __init__(
        self,
        open_call: Callable[[], grpc.aio.StreamStreamCall],
        item_type: type,
        request_type: type,
        on_write: Callable[[float], None] | None = None,
    ) -> None:
        """`on_write`: called with each write's seconds (a write that waits holds up every item queued behind it)."""
        self.call = open_call()
        self.on_write = on_write
        self.item_type = item_type
        self.request_type = request_type
        self.outbox: list = []
        self.wake = asyncio.Event()
        self.streams: dict[int, SharedStream] = {}
        self.unsent: list[SharedStream] = []  # opened since the last write: their first items are in the outbox
        self.next_id = 0
        self.failure: CallFailed | None = None
        self.sender = asyncio.create_task(self._send())
        self.receiver = asyncio.create_task(self._receive())

    @classmethod
    def to_codec(cls, stub, on_write: Callable[[float], None] | None = None) -> SharedCall:
        return cls(stub.DecodeMany, codec_pb2.StreamRequest, codec_pb2.DecodeManyRequest, on_write)

    @classmethod
    def to_talker(cls, stub, on_write: Callable[[float], None] | None = None) -> SharedCall:
        return cls(stub.GenerateMany, talker_pb2.GenerateItem, talker_pb2.GenerateManyRequest, on_write)

    @property
    def alive(self) -> bool:
        return self.failure is None

    def open(self, stream_type: type[SharedStream], **first) -> SharedStream:
        """Start a stream with its first item (`open=` a DecodeOpen, `start=` a GenerateRequest)."""
        self.next_id += 1
        stream = stream_type(self, self.next_id)
        if self.failure is not None:
            stream.receive(self.failure)
            return stream
        self.streams[stream.stream_id] = stream
        self.unsent.append(stream)
        self.send(stream.stream_id, **first)
        return stream

    def open_codec(self, opening: codec_pb2.DecodeOpen) -> CodecStream:
        """A codec stream; await its `started()` to learn whether the codec admitted it."""
        return self.open(CodecStream, open=opening)  # type: ignore[return-value]

    def open_talker(self, request: talker_pb2.GenerateRequest) -> TalkerStream:
        """A talker stream; its first `read()` is its first chunk, or StreamFailed when the talker refused it."""
        return self.open(TalkerStream, start=request)  # type: ignore[return-value]

    def send(self, stream_id: int, **kind) -> None:
        """Queue a stream's item for the next write (dropped once the call has failed: its streams know)."""
        if self.failure is None:
            self.outbox.append(self.item_type(stream_id=stream_id, **kind))
            self.wake.set()

    def forget(self, stream: SharedStream) -> None:
        if self.streams.get(stream.stream_id) is stream:
            del self.streams[stream.stream_id]

    async def close(self) -> None:
        self.call.cancel()
        self.sender.cancel()
        self.receiver.cancel()
        await asyncio.gather(self.sender, self.receiver, return_exceptions=True)

    async def _send(self) -> None:
        try:
            while True:
                await self.wake.wait()
                self.wake.clear()
                batch, self.outbox = self.outbox, []
                taken = time.monotonic()
                for stream in self.unsent:  # their first items go now: the gateway's part of their way ends here
                    stream.sent_at = taken
                self.unsent.clear()
                await self.call.write(self.request_type(items=batch))
                if self.on_write is not None:
                    self.on_write(time.monotonic() - taken)
        except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
            pass  # the call ended: the receiver reports its status

    async def _receive(self) -> None:
        try:
            while (response := await self.call.read()) is not grpc.aio.EOF:
                for event in response.events:
                    stream = self.streams.get(event.stream_id)
                    if stream is not None:  # else: cancelled here while the event was on its way
                        stream.receive(event)
            code, details = await self.call.code(), await self.call.details()
            if code == grpc.StatusCode.OK:
                code, details = grpc.StatusCode.UNAVAILABLE, "the service ended the shared call (draining)"
        except grpc.aio.AioRpcError as e:
            code, details = e.code(), e.details() or ""
        self.failure = CallFailed(code, details)
        self.sender.cancel()
        for stream in list(self.streams.values()):
            stream.receive(self.failure)
        self.streams.clear()
