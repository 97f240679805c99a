"""`services/common/gc_pauses.py`: the startup heap frozen out of garbage collections, and each pause recorded."""

import asyncio
import gc
import subprocess
import sys
import textwrap
import weakref

from omni.services.common.gc_pauses import GcPauses, freeze_startup_heap
from omni.services.common.metrics import MetricsServer


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector can free it


def samples(histogram, generation: str) -> tuple[float, float]:
    """(count, sum) observed for one generation."""
    found = {}
    for metric in histogram.collect():
        for sample in metric.samples:
            if sample.labels.get("generation") == generation:
                found[sample.name.rsplit("_", 1)[-1]] = sample.value
    return found.get("count", 0.0), found.get("sum", 0.0)


def test_each_collection_is_observed_by_generation_until_stopped():
    histogram = MetricsServer("test").gc_pauses()
    pauses = GcPauses(histogram).start()
    try:
        gc.collect(0)
        gc.collect(2)
        assert samples(histogram, "2")[0] == 0  # recorded, not yet observed: the callback touches no metric
        pauses.flush()
        assert samples(histogram, "0")[0] >= 1
        count, total = samples(histogram, "2")
        assert count >= 1 and total > 0
    finally:
        pauses.stop()
    gc.collect(2)
    assert samples(histogram, "2")[0] == count
    pauses.stop()  # stopping twice is harmless


def test_the_startup_heap_is_frozen_and_its_garbage_freed_first():
    kept = [Node() for _ in range(100)]
    garbage = Node()
    freed = weakref.ref(garbage)
    del garbage
    try:
        frozen = freeze_startup_heap()
        assert frozen >= 100 and gc.get_freeze_count() == frozen
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(node) in tracked for node in kept)  # out of every later collection's walk
        assert freed() is None  # startup's garbage was collected, not frozen
        later = Node()
        assert any(o is later for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_a_warm_service_records_the_collections_after_its_freeze_not_the_freeze_itself():
    histogram = MetricsServer("test").gc_pauses()
    pauses = GcPauses(histogram)
    try:
        frozen = pauses.freeze_and_start()
        assert frozen == gc.get_freeze_count() > 0
        assert samples(histogram, "2")[0] == 0  # the freeze's own full collection is not a serving pause
        gc.collect(2)
        pauses.flush()
        assert samples(histogram, "2")[0] == 1
    finally:
        pauses.stop()
        gc.unfreeze()


def test_a_running_loop_observes_the_pauses_without_a_flush_call_and_stop_flushes_the_rest():
    histogram = MetricsServer("test").gc_pauses()

    async def scenario() -> tuple[float, float]:
        pauses = GcPauses(histogram, flush_s=0.01).start()
        gc.collect(2)
        await asyncio.sleep(0.1)
        flushed = samples(histogram, "2")[0]
        gc.collect(2)
        pauses.stop()
        return flushed, samples(histogram, "2")[0]

    flushed, stopped = asyncio.run(scenario())
    assert flushed >= 1 and stopped == flushed + 1


# A gateway worker (prometheus_client multiprocess mode: one non-reentrant lock for every value) creating label
# values and observing while collections run as often as the collector allows. A callback that observed inside the
# collector would, once a collection lands under that lock, wait on it forever (session 18, run 65).
UNDER_THE_METRICS_LOCK = textwrap.dedent(
    """
    import gc, os, sys, tempfile
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp()
    from prometheus_client import Histogram
    from omni.services.common.gc_pauses import GcPauses

    pauses = GcPauses(Histogram("gc_pause", "gc", ["generation"])).start()
    work = Histogram("work", "work", ["key"])
    gc.set_threshold(1)
    cycles = []
    for i in range(3000):
        work.labels(str(i % 300)).observe(0.1)
        cycles.append([i])
    gc.set_threshold(700)
    pauses.stop()
    counts = [s.value for m in pauses.histogram.collect() for s in m.samples if s.name == "gc_pause_count"]
    print(sum(counts))
    """
)


def test_collections_under_the_multiprocess_metrics_lock_do_not_freeze_the_process():
    try:
        done = subprocess.run(
            [sys.executable, "-c", UNDER_THE_METRICS_LOCK], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the process froze: a collector callback waited on the metrics lock") from None
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) >= 3000  # every collection was observed, none lost
