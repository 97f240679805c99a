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
    milliseconds histogram, 1 for seconds. `start` hooks it into `gc.callbacks`; `stop` unhooks it."""

    def __init__(self, histogram: Histogram, unit_per_s: float = 1000.0) -> None:
        self.histogram = histogram
        self.unit_per_s = unit_per_s
        self._began = 0.0

    def start(self) -> GcPauses:
        gc.callbacks.append(self._on_collection)
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

    def _on_collection(self, phase: str, info: dict) -> None:
        # The collector never runs inside its own callbacks, so start and stop pair up.
        if phase == "start":
            self._began = time.perf_counter()
        else:
            pause = (time.perf_counter() - self._began) * self.unit_per_s
            self.histogram.labels(str(info["generation"])).observe(pause)
