"""The gateway's side of the codec's DecodeMany: one call per codec replica, shared by this worker's requests.

A request opens a `CodecStream` on its replica's `SharedDecodeCall`. Its messages go into the call's outbox, and one
sender task writes whatever is waiting as one DecodeManyRequest, so the chunks of requests whose talker steps
arrive together share a message. One receiver task reads the DecodeManyResponses (a codec step's audio for many
streams) and hands each event to its stream's inbox. The codec's event loop then handles a gRPC message per batch
instead of one per chunk in each direction, which is most of its cost per chunk (tools/profile_host.py).

A stream holds at most the codec's `max_backlog_frames` undecoded frames: `write_chunk` waits for audio to come
back before sending more (the per-stream flow control that Decode got from gRPC's). When the call ends or fails,
every stream on it gets `CodecCallFailed` and the next request opens a new call.
"""

from __future__ import annotations

import asyncio

import grpc

from omni.proto import codec_pb2, common_pb2


class CodecStreamFailed(Exception):
    """The codec refused or ended one stream (an `error` event) with a gRPC status code, as Decode's call would."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class CodecCallFailed(CodecStreamFailed):
    """The shared call itself ended (the codec went away, restarted or drained): every stream on it ended."""


STATUS_BY_NUMBER = {status.value[0]: status for status in grpc.StatusCode}


class CodecStream:
    """One request's stream on a shared DecodeMany call: `started()`, then `write_chunk()`s and `end()` from the
    talker's side while `read()` returns its audio events and finally its summary; `cancel()` drops it."""

    def __init__(self, call: SharedDecodeCall, stream_id: int) -> None:
        self.call = call
        self.stream_id = stream_id
        self.inbox: asyncio.Queue[codec_pb2.StreamEvent | CodecStreamFailed] = asyncio.Queue()
        self.failure: CodecStreamFailed | None = None  # set when the codec ended the stream with an error
        self.finished = False  # summary or failure received, or cancelled: nothing more to send
        self.max_backlog_frames = 0  # from `started`; 0: no limit
        self.frames_sent = 0
        self.frames_back = 0
        self.room = asyncio.Event()  # set when audio comes back (the backlog shrank)

    async def started(self) -> codec_pb2.DecodeStarted:
        """The codec's `started` event; CodecStreamFailed when it refused the stream."""
        event = await self.read()
        if event.WhichOneof("kind") != "started":
            raise CodecStreamFailed(grpc.StatusCode.INTERNAL, f"expected `started`, got {event.WhichOneof('kind')}")
        self.max_backlog_frames = event.started.max_backlog_frames
        return event.started

    async def read(self) -> codec_pb2.StreamEvent:
        """The stream's next event (`audio`, then `summary`); raises CodecStreamFailed for an `error`."""
        event = await self.inbox.get()
        if isinstance(event, CodecStreamFailed):
            raise event
        return event

    async def write_chunk(self, chunk: common_pb2.CodecChunk) -> None:
        """Send a chunk once the codec has room for it in this stream's backlog; CodecStreamFailed if the stream
        has already failed (the reader of `read()` gets the same failure)."""
        limit = self.max_backlog_frames
        while limit and self.failure is None and self.frames_sent - self.frames_back + chunk.num_frames > limit:
            self.room.clear()
            await self.room.wait()
        if self.failure is not None:
            raise self.failure
        self.frames_sent += chunk.num_frames
        self.call.send(codec_pb2.StreamRequest(stream_id=self.stream_id, chunk=chunk))

    def end(self) -> None:
        """The input ended without a `last` chunk: the codec ends the stream after what was sent."""
        if not self.finished:
            self.call.send(codec_pb2.StreamRequest(stream_id=self.stream_id, end=True))

    def cancel(self) -> None:
        """Drop the stream (the request ended, failed or was disconnected): the codec frees its slot at once."""
        if not self.finished:
            self.finished = True
            self.call.forget(self)
            self.call.send(codec_pb2.StreamRequest(stream_id=self.stream_id, cancel=True))

    def _receive(self, event: codec_pb2.StreamEvent | CodecStreamFailed) -> None:
        """Receiver task: one event for this stream, in order."""
        kind = "failed" if isinstance(event, CodecStreamFailed) else event.WhichOneof("kind")
        if kind == "error":
            code = STATUS_BY_NUMBER.get(event.error.code, grpc.StatusCode.UNKNOWN)
            event = CodecStreamFailed(code, event.error.message)
            kind = "failed"
        if kind == "audio":
            self.frames_back += event.audio.num_frames
            self.room.set()
        elif kind in ("summary", "failed"):
            self.finished = True
            self.call.forget(self)
            if kind == "failed":
                self.failure = event
                self.room.set()  # a writer waiting for room sees the failure
        self.inbox.put_nowait(event)


class SharedDecodeCall:
    """One DecodeMany call to a codec replica with its sender and receiver tasks (see the module docstring)."""

    def __init__(self, stub) -> None:
        self.call = stub.DecodeMany()
        self.outbox: list[codec_pb2.StreamRequest] = []
        self.wake = asyncio.Event()
        self.streams: dict[int, CodecStream] = {}
        self.next_id = 0
        self.failure: CodecCallFailed | None = None
        self.sender = asyncio.create_task(self._send())
        self.receiver = asyncio.create_task(self._receive())

    @property
    def alive(self) -> bool:
        return self.failure is None

    def open(self, opening: codec_pb2.DecodeOpen) -> CodecStream:
        """Start a stream; await its `started()` to learn whether the codec admitted it."""
        self.next_id += 1
        stream = CodecStream(self, self.next_id)
        if self.failure is not None:
            stream._receive(self.failure)
            return stream
        self.streams[stream.stream_id] = stream
        self.send(codec_pb2.StreamRequest(stream_id=stream.stream_id, open=opening))
        return stream

    def send(self, item: codec_pb2.StreamRequest) -> None:
        """Queue a stream's message for the next write (dropped once the call has failed: its streams know)."""
        if self.failure is None:
            self.outbox.append(item)
            self.wake.set()

    def forget(self, stream: CodecStream) -> None:
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
                await self.call.write(codec_pb2.DecodeManyRequest(items=batch))
        except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
            pass  # the call ended: the receiver reports its status

    async def _receive(self) -> None:
        try:
            while (response := await self.call.read()) is not grpc.aio.EOF:
                for event in response.events:
                    stream = self.streams.get(event.stream_id)
                    if stream is not None:  # else: cancelled here while the event was on its way
                        stream._receive(event)
            code, details = await self.call.code(), await self.call.details()
            if code == grpc.StatusCode.OK:
                code, details = grpc.StatusCode.UNAVAILABLE, "the codec ended the shared call (draining)"
        except grpc.aio.AioRpcError as e:
            code, details = e.code(), e.details() or ""
        self.failure = CodecCallFailed(code, details)
        self.sender.cancel()
        for stream in list(self.streams.values()):
            stream._receive(self.failure)
        self.streams.clear()
