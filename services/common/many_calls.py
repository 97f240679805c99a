"""The server side of a many-stream call (the codec's DecodeMany, the talker's GenerateMany): many client streams share
one bidi gRPC call, so a service's event loop handles one gRPC message per batch instead of one per chunk.

`serve_call` is a service's handler body. Its reader task (`read_items`) hands each incoming item to the service,
which starts, feeds or cancels its stream. The engine puts a stream's outputs on the call's one queue, tagged with
the stream (`Tagged`), behind whatever the reader queued for it. `send_ready` turns everything queued into as few
responses as the byte cap allows, through the service's `add_event`, until the call is done: its input ended (or
shutdown began) and its streams have ended. Streams still open when the call ends (cancelled, broken) are ended by
the service's `end_stream`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial

# Items of the call itself (queued with stream None): its input ended; shutdown began (wakes the sending loop).
INPUT_DONE, DRAIN = object(), object()


@dataclass(eq=False)
class ManyStream:
    """One stream of a many-stream call: the client's id for it; `ended` once nothing more is sent for it."""

    stream_id: int
    request_id: str = ""
    # The same moment on the wall clock, for its log line; read first (fields are made in order), so a thread switch
    # between the reads makes it early, never later than `start`.
    start_wall: float = field(default_factory=time.time)
    start: float = field(default_factory=time.perf_counter)
    ended: bool = False


class ManyCall:
    """A many-stream call's open streams by id and one queue of (stream, item) for all of them, in order."""

    def __init__(self, draining: bool) -> None:
        self.streams: dict[int, ManyStream] = {}
        self.events: asyncio.Queue = asyncio.Queue()
        self.input_done = False
        self.draining = draining

    @property
    def done(self) -> bool:
        return (self.input_done or self.draining) and not self.streams and self.events.empty()

    def forget(self, entry: ManyStream) -> None:
        """The stream ended: no more events for it, and its id may be used again."""
        entry.ended = True
        if self.streams.get(entry.stream_id) is entry:
            del self.streams[entry.stream_id]


class Tagged:
    """A stream's outputs as its engine sees them (`put_nowait`): they go on the call's queue, tagged."""

    def __init__(self, events: asyncio.Queue, entry: ManyStream) -> None:
        self.events = events
        self.entry = entry

    def put_nowait(self, item: object) -> None:
        self.events.put_nowait((self.entry, item))


class ManyCalls:
    """A service's open many-stream calls, so that shutdown can end each once its streams have."""

    def __init__(self) -> None:
        self.calls: set[ManyCall] = set()
        self.draining = False

    def open(self) -> ManyCall:
        call = ManyCall(self.draining)
        self.calls.add(call)
        return call

    def close(self, call: ManyCall) -> None:
        self.calls.discard(call)

    def drain(self) -> None:
        """Shutdown began: each call ends once its streams have (the service refuses new streams itself)."""
        self.draining = True
        for call in self.calls:
            call.draining = True
            call.events.put_nowait((None, DRAIN))


async def read_items(request_iterator, call: ManyCall, handle: Callable, broken: Callable[[Exception], Exception]):
    """The reader task: `handle(item)` for each item of each message; then INPUT_DONE, or `broken(error)` (raised by
    the sending loop, which ends the call) when reading the call failed."""
    ended_by: object = INPUT_DONE
    try:
        async for request in request_iterator:
            for item in request.items:
                handle(item)
    except Exception as e:
        ended_by = broken(e)
    finally:
        call.events.put_nowait((None, ended_by))


async def send_ready(
    call: ManyCall, add_event: Callable[[object, ManyStream, object], int], new_response: Callable, max_bytes: int
) -> AsyncIterator:
    """Responses carrying every queued event, until the call is done. `add_event(response, stream, item)` adds an
    item's event(s) to the response and returns their payload bytes; a response is sent once it holds `max_bytes`."""
    while not call.done:
        ready = [await call.events.get()]
        while not call.events.empty():
            ready.append(call.events.get_nowait())
        response, size = new_response(), 0
        for entry, item in ready:
            if entry is None:
                if isinstance(item, Exception):
                    raise item
                call.input_done = call.input_done or item is INPUT_DONE
                continue
            size += add_event(response, entry, item)
            if size >= max_bytes:
                yield response
                response, size = new_response(), 0
        if len(response.events):
            yield response


async def serve_call(
    calls: ManyCalls,
    request_iterator,
    handle_item: Callable[[ManyCall, object], None],
    add_event: Callable[[ManyCall, object, ManyStream, object], int],
    end_stream: Callable[[ManyCall, ManyStream], None],
    new_response: Callable,
    max_bytes: int,
    broken: Callable[[Exception], Exception],
) -> AsyncIterator:
    """A many-stream call from start to end: yields its responses; raises `broken(error)` if reading it failed."""
    call = calls.open()
    reader = asyncio.create_task(read_items(request_iterator, call, partial(handle_item, call), broken))
    try:
        async for response in send_ready(call, partial(add_event, call), new_response, max_bytes):
            yield response
    finally:
        reader.cancel()
        calls.close(call)
        for entry in list(call.streams.values()):  # the call ended under them (cancelled or broken)
            end_stream(call, entry)
