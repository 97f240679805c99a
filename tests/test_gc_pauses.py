"""`services/common/gc_pauses.py`: the startup heap frozen out of garbage collections, and each pause recorded."""

import gc
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
        assert samples(histogram, "2")[0] == 1
    finally:
        pauses.stop()
        gc.unfreeze()
