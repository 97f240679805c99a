"""Prometheus metrics: one HTTP endpoint per service on its own port, one registry per service.

A registry per service (instead of prometheus_client's global one) lets tests run several services in one
process and keeps each endpoint to its own service's series.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

# Bucket sets shared by the services so dashboards can compare them.
LATENCY_MS_BUCKETS = (0.5, 1, 2, 5, 10, 20, 35, 50, 75, 100, 150, 250, 400, 700, 1000, 2000, 5000, 10000)
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
GC_PAUSE_MS_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)
LOOP_LAG_MS_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 250, 1000)  # event-loop lags and writes that wait


class MetricsServer:
    """The service's registry plus its HTTP endpoint (started by `start`)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.registry = CollectorRegistry()
        self.port: int | None = None
        self._server = None
        self._thread = None

    def counter(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
        return Counter(name, doc, labels, namespace=self.namespace, registry=self.registry)

    def gauge(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
        return Gauge(name, doc, labels, namespace=self.namespace, registry=self.registry)

    def histogram(self, name: str, doc: str, buckets=LATENCY_MS_BUCKETS, labels: tuple[str, ...] = ()) -> Histogram:
        return Histogram(name, doc, labels, namespace=self.namespace, registry=self.registry, buckets=buckets)

    def gc_pauses(self) -> Histogram:
        """The process's garbage-collector pauses (`gc_pauses.GcPauses` observes them)."""
        return self.histogram(
            "gc_pause_ms",
            "Python garbage collections of this process by generation, ms (every thread waits)",
            GC_PAUSE_MS_BUCKETS,
            ("generation",),
        )

    def loop_lag(self) -> Histogram:
        """How late the process's event loop woke a 50 ms timer (`loop_lag.LoopLag` observes it)."""
        return self.histogram(
            "loop_lag_ms",
            "how late this process's event loop woke a 50 ms timer, ms (RPCs waiting on the loop waited as long)",
            LOOP_LAG_MS_BUCKETS,
        )

    def start(self, port: int, host: str = "0.0.0.0") -> int:
        """Serve /metrics on host:port (0 picks a free port); returns the bound port. Port < 0 disables it."""
        if port < 0:
            return -1
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.port = self._server.server_port
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
