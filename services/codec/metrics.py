"""Prometheus series of the codec service."""

from omni.services.common.metrics import BATCH_SIZE_BUCKETS, MetricsServer


class CodecMetrics:
    def __init__(self, server: MetricsServer | None = None) -> None:
        self.server = server or MetricsServer("omni_codec")
        m = self.server
        self.active_streams = m.gauge("active_streams", "streams holding a decoder slot")
        self.capacity = m.gauge("capacity_streams", "decoder slots (max_streams)")
        self.tick_ms = m.histogram("tick_ms", "duration of one engine step (reset, prime, decode), ms")
        self.tick_compute_ms = m.histogram(
            "tick_compute_ms", "time the engine thread spent in one step (to the PCM on the host), ms"
        )
        self.planned_ms = m.histogram(
            "planned_ms", "a graph decode's replay time by the capture-time costs its plan was chosen by, ms"
        )
        self.batch_size = m.histogram("batch_size", "streams decoded together in one step", BATCH_SIZE_BUCKETS)
        self.coalesce_wait_ms = m.histogram("coalesce_wait_ms", "time a step waited to fill its batch, ms")
        self.chunk_queue_ms = m.histogram("chunk_queue_ms", "time a chunk waited before its decode step, ms")
        self.late_ms = m.histogram(
            "late_ms",
            "rows delivered after a listener who started at the stream's first audio ran dry, by how late, ms",
        )
        self.deferred_rows = m.counter(
            "deferred_rows", "rows left for a later tick by max_tick_rows (least lead first)"
        )
        self.frames_decoded = m.counter("frames_decoded", "codec frames decoded")
        self.replayed_frames = m.counter(
            "replayed_frames",
            "frames the graph replays computed, the padding (spare rows, short chunks padded to the graph's) "
            "included: over frames_decoded, the work a frame costs against an unpadded decode",
        )
        self.audio_seconds = m.counter("audio_seconds", "seconds of audio produced")
        self.decode_calls = m.counter("decode_calls", "batched decode calls by path (graph, eager)", ("path",))
        self.streams = m.counter("streams", "finished streams by outcome", ("outcome",))
        self.gc_pause_ms = m.gc_pauses()
        self.loop_lag_ms = m.loop_lag()
