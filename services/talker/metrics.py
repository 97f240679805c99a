"""Prometheus series of the talker service."""

from omni.services.common.metrics import BATCH_SIZE_BUCKETS, MetricsServer

TOKEN_BUCKETS = (1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096)
CHUNK_FRAME_BUCKETS = (2, 3, 4, 6, 8, 11, 15)


class TalkerMetrics:
    def __init__(self, server: MetricsServer | None = None) -> None:
        self.server = server or MetricsServer("omni_talker")
        m = self.server
        self.active_slots = m.gauge("active_slots", "requests holding a slot (prefilling or decoding)")
        self.capacity = m.gauge("capacity_slots", "slots (max_streams)")
        self.queue_depth = m.gauge("queue_depth", "requests waiting for a slot")
        self.queue_wait_ms = m.histogram("queue_wait_ms", "time from arrival to admission into a slot, ms")
        self.step_ms = m.histogram("step_ms", "duration of one engine step (prefill chunks + batched decode), ms")
        self.step_compute_ms = m.histogram(
            "step_compute_ms",
            "time the engine thread spent per step: queueing it and reading a step's results back (with async "
            "scheduling the previous step's), ms",
        )
        self.prefill_ms = m.histogram(
            "prefill_ms", "device time of the prefill part of a step that had prompt chunks (host time on CPU), ms"
        )
        self.prefill_batch = m.histogram("prefill_batch_size", "prompt chunks in one prefill", BATCH_SIZE_BUCKETS)
        self.batch_size = m.histogram("batch_size", "slots in one batched decode step", BATCH_SIZE_BUCKETS)
        self.prefill_tokens = m.counter("prefill_tokens", "prompt positions prefilled")
        self.frames = m.counter("frames", "codec frames produced")
        self.first_chunk_ms = m.histogram("time_to_first_chunk_ms", "time from arrival to the first chunk, ms")
        self.first_chunk_frames = m.counter(
            "first_chunk_frames", "requests whose first chunk's frames the talker picked, by frames", ("frames",)
        )
        self.early_chunk_frames = m.histogram(
            "early_chunk_frames",
            "frames of each chunk sent before its planned size because its listener's lead fell under min_lead_ms",
            CHUNK_FRAME_BUCKETS,
        )
        self.outcomes = m.counter("requests", "finished requests by outcome", ("outcome",))
        self.gc_pause_ms = m.gc_pauses()
        self.loop_lag_ms = m.loop_lag()
