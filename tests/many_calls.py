"""Reading a many-stream call (DecodeMany, GenerateMany) the way the tests check it."""

from collections import defaultdict

import grpc


async def read_events(call) -> tuple[dict[int, list], list[int]]:
    """Every event of the call by stream id, and the number of events each response carried."""
    events, sizes = defaultdict(list), []
    while (response := await call.read()) is not grpc.aio.EOF:
        sizes.append(len(response.events))
        for event in response.events:
            events[event.stream_id].append(event)
    return events, sizes
