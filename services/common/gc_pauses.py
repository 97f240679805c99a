"""Python's garbage collector in a serving process: the pauses it makes, and the startup heap kept out of them.

A full (generation 2) collection walks every object the collector tracks, with the GIL held, so every thread of the
process stops for it: the event loop serving RPCs and the engine thread launching device work. With torch, a
checkpoint's tokenizer and the gRPC and HTTP stacks loaded, a gateway process tracks ~215k objects and a full
collection took ~120 ms on a 2-core CI machine. Objects alive once a service is warmed up (modules, the model,
the tokenizer's tables, captured graphs) live as long as the process: `freeze_startup_heap` moves them to the
permanent generation, so later collections walk only what serving allocated since. `GcPauses` records how long each
collection took, by generation, in a histogram an operator can watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

from prometheus_client import Histogram


def freeze_startup_heap() -> int:
    """Collect startup's garbage, then freeze every object still alive; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class GcPauses:
    """Observe each collection's duration in `histogram` (label `generation`), scaled by `unit_per_s`: 1000 for a
    milliseconds histogram, 1 for seconds. `start` hooks it into `gc.callbacks`; `stop` unhooks it.

    The collector runs wherever an allocation (Python 3.12: any bytecode boundary) finds its threshold passed, so
    also inside prometheus_client while it holds a value's lock; in multiprocess mode (the gateway's workers) one
    non-reentrant lock guards every value of the process. A callback that observed there would wait on its own
    thread's lock forever: a gateway worker froze that way on the GPU (session 18, run 65). So the callback only
    appends to a list, and `flush` observes the list from ordinary code: every `flush_s` from a task on the loop
    that was running at `start`, and at `stop`."""

    def __init__(self, histogram: Histogram, unit_per_s: float = 1000.0, flush_s: float = 0.1) -> None:
        self.histogram = histogram
        self.unit_per_s = unit_per_s
        self.flush_s = flush_s
        self.pending: list[tuple[int, float]] = []  # (generation, pause) not yet observed
        self._began = 0.0
        self._flusher: asyncio.Task | None = None

    def start(self) -> GcPauses:
        gc.callbacks.append(self._on_collection)
        with contextlib.suppress(RuntimeError):  # no running loop: the owner calls `flush` itself
            self._flusher = asyncio.get_running_loop().create_task(self._flush_periodically(), name="gc-pauses")
        return self

    def freeze_and_start(self) -> int:
        """A warmed-up service's call: `freeze_startup_heap`, then record serving's collections (not the freeze's own
        full one, hundreds of ms before the service is ready); returns how many objects are frozen."""
        frozen = freeze_startup_heap()
        self.start()
        return frozen

    def stop(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        self.flush()

    def flush(self) -> None:
        """Observe the pauses recorded since the last flush (never call from a collector callback)."""
        # Swap first: a collection during the loop below appends to the new list, seen at the next flush.
        pending, self.pending = self.pending, []
        for generation, pause in pending:
            self.histogram.labels(str(generation)).observe(pause)

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            self.flush()

    def _on_collection(self, phase: str, info: dict) -> None:
        # The collector never runs inside its own callbacks, so start and stop pair up.
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.pending.append((info["generation"], (time.perf_counter() - self._began) * self.unit_per_s))
