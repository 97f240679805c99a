"""Prometheus metrics of the gateway (one registry per app, so several apps can live in one process).

With several gateway worker processes (`omni gateway --workers N`, `workers.py`) prometheus_client runs in its
multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`, set before the workers start): values live in per-process files and
`exposition()` returns the sum over every worker, whichever worker the scrape lands on. Names and labels are the
same in both modes (the in-flight gauge is summed over live workers).

Underrun is what a real-time player that starts at the first chunk would have waited for audio in total
(stalling when its buffer runs dry), computed from the chunk arrival times.
"""

from __future__ import annotations

import os
import time

from omni.services.common.metrics import GC_PAUSE_MS_BUCKETS, LOOP_LAG_MS_BUCKETS
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

OUTCOMES = ("ok", "client_error", "rejected", "cancelled", "timeout", "error")


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.ttfa = Histogram(
            "omni_gateway_time_to_first_audio_seconds",
            "Request arrival to the first audio chunk from the backend.",
            ["model", "stream"],
            buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=r,
        )
        self.rtf = Histogram(
            "omni_gateway_real_time_factor",
            "Wall time from arrival to the last chunk divided by the audio duration.",
            ["model"],
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0, 10.0),
            registry=r,
        )
        self.underrun = Histogram(
            "omni_gateway_underrun_seconds",
            "Total playback stall of a real-time player started at the first chunk.",
            ["model"],
            buckets=(0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=r,
        )
        self.audio_seconds = Counter(
            "omni_gateway_audio_seconds", "Seconds of audio sent to clients.", ["model"], registry=r
        )
        self.requests = Counter(
            "omni_gateway_requests", "Speech requests by outcome.", ["endpoint", "outcome"], registry=r
        )
        self.responses = Counter(
            "omni_gateway_http_responses",
            "Every HTTP response (schema, auth and size rejections included) by route and status.",
            ["path", "status"],
            registry=r,
        )
        self.gc_pause = Histogram(
            "omni_gateway_gc_pause_seconds",
            "Python garbage collections of a gateway process by generation (every thread of it waits).",
            ["generation"],
            buckets=tuple(ms / 1000.0 for ms in GC_PAUSE_MS_BUCKETS),
            registry=r,
        )
        lag_buckets = tuple(ms / 1000.0 for ms in LOOP_LAG_MS_BUCKETS)
        self.loop_lag = Histogram(
            "omni_gateway_loop_lag_seconds",
            "How late a gateway process's event loop woke a 50 ms timer: what every request it holds waited then.",
            buckets=lag_buckets,
            registry=r,
        )
        self.backend_write = Histogram(
            "omni_gateway_backend_write_seconds",
            "Time to write one message of a shared call to a backend service; that call's next items wait meanwhile.",
            ["service"],
            buckets=lag_buckets,
            registry=r,
        )
        self.in_flight = Gauge(
            "omni_gateway_requests_in_flight", "Speech requests being served.", multiprocess_mode="livesum", registry=r
        )
        self._exposed = self.registry
        if multiprocess():
            self._exposed = CollectorRegistry()
            MultiProcessCollector(self._exposed, os.environ["PROMETHEUS_MULTIPROC_DIR"])

    def exposition(self) -> bytes:
        """The text a /metrics scrape returns: this app's metrics, or the sum over all worker processes."""
        return generate_latest(self._exposed)


def multiprocess() -> bool:
    """Whether prometheus_client keeps values in PROMETHEUS_MULTIPROC_DIR files (decided when it was imported)."""
    return values.ValueClass is not values.MutexValue


class StreamClock:
    """Per-request timing: time to first audio, audio produced, player underrun."""

    def __init__(self) -> None:
        # The same moment on the wall clock (places the request against other processes), read first: a thread
        # switch between the two reads then makes it early, never later than the monotonic start.
        self.start_wall = time.time()
        self.start = time.monotonic()
        self.first_audio: float | None = None
        self.audio_s = 0.0
        self.underrun_s = 0.0
        self._play_end = 0.0  # when the simulated player runs out of audio

    def chunk(self, seconds: float) -> None:
        now = time.monotonic()
        if self.first_audio is None:
            self.first_audio = now
            self._play_end = now
        if now > self._play_end:
            self.underrun_s += now - self._play_end
            self._play_end = now
        self._play_end += seconds
        self.audio_s += seconds

    def record(self, metrics: GatewayMetrics, model: str, stream: str) -> None:
        """Observe a request that produced audio to its end."""
        if self.first_audio is None:
            return
        metrics.ttfa.labels(model, stream).observe(self.first_audio - self.start)
        metrics.audio_seconds.labels(model).inc(self.audio_s)
        if self.audio_s > 0:
            metrics.rtf.labels(model).observe((time.monotonic() - self.start) / self.audio_s)
            metrics.underrun.labels(model).observe(self.underrun_s)
