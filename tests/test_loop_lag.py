"""`services/common/loop_lag.py`: how late an event loop woke its timer, observed into a histogram."""

import asyncio
import time

from omni.services.common.loop_lag import LoopLag
from omni.services.common.metrics import LOOP_LAG_MS_BUCKETS
from prometheus_client import CollectorRegistry, Histogram


def observed(histogram: Histogram) -> dict[str, float]:
    """The histogram's samples by name suffix and bucket edge: count, sum, and le=... counts."""
    values = {}
    for metric in histogram.collect():
        for sample in metric.samples:
            key = sample.name.rsplit("_", 1)[-1]
            values[f"le={sample.labels['le']}" if "le" in sample.labels else key] = sample.value
    return values


def test_a_blocked_loop_shows_as_one_late_timer_and_a_free_one_as_on_time():
    buckets = tuple(ms / 1000.0 for ms in LOOP_LAG_MS_BUCKETS)
    histogram = Histogram("lag_seconds", "lag", buckets=buckets, registry=CollectorRegistry())

    async def scenario():
        lag = LoopLag(histogram, interval_s=0.01).start()
        await asyncio.sleep(0.1)  # free: ~10 timers, each woken about on time
        time.sleep(0.15)  # the loop blocked: the timer due in <= 10 ms fires ~140 ms late
        await asyncio.sleep(0.05)
        await lag.stop()
        count = observed(histogram)["count"]
        await asyncio.sleep(0.05)
        return count

    count = asyncio.run(scenario())
    values = observed(histogram)
    assert values["count"] == count >= 5  # nothing observed once stopped
    assert count - values["le=0.1"] >= 1  # the late wake-up, 0.1-0.25 s late (a loaded machine may add others)
    assert values["sum"] >= 0.13
