"""How late an event loop runs what is due: a timer that should fire every `interval_s`, and how much later it did.

Every request a process's event loop holds waits while the loop is blocked (a long callback, a garbage collection,
a burst of synchronous work), and nothing else in a request's own timings says so. One timer per process,
observed into a histogram, shows those stalls as an operator sees them: by how long and how often.
"""

from __future__ import annotations

import asyncio
import contextlib

from prometheus_client import Histogram


class LoopLag:
    """Observe, every `interval_s`, how late the running loop woke its timer (seconds x `unit_per_s`)."""

    def __init__(self, histogram: Histogram, interval_s: float = 0.05, unit_per_s: float = 1.0) -> None:
        self.histogram = histogram
        self.interval_s = interval_s
        self.unit_per_s = unit_per_s
        self.task: asyncio.Task | None = None

    def start(self) -> LoopLag:
        self.task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")
        return self

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.histogram.observe(max(0.0, loop.time() - due) * self.unit_per_s)
