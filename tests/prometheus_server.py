"""A real Prometheus server for tests: loopback only, a free port, its own data directory, 1 s scrapes.

Usage:
    with PrometheusServer(tmp_path, targets=["127.0.0.1:8000"]) as prom:
        samples = prom.wait_for('omni_gateway_requests_total{outcome="ok"}')
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx

from omni.commands.serve import free_port


class PrometheusServer:
    def __init__(self, work_dir: Path, targets: list[str], job: str = "omni", metrics_path: str = "/metrics") -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("prometheus not found; install it with `apt-get install -y prometheus`")
        self.work_dir = Path(work_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = self.work_dir / "prometheus.yml"
        quoted = ", ".join(f'"{t}"' for t in targets)
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: {job}\n    metrics_path: {metrics_path}\n"
            f"    static_configs:\n      - targets: [{quoted}]\n"
        )
        self._command = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.work_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> PrometheusServer:
        with open(self.work_dir / "prometheus.log", "wb") as log:  # the child keeps its own descriptor
            self._process = subprocess.Popen(self._command, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait(lambda: httpx.get(self.url + "/-/ready", timeout=1).status_code == 200, "prometheus ready")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def _wait(self, ready, what: str, attempts: int = 600) -> None:
        for _ in range(attempts):
            if self._process is not None and self._process.poll() is not None:
                log = (self.work_dir / "prometheus.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"prometheus exited ({self._process.returncode}): {log}")
            try:
                if ready():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}")

    def query(self, expr: str) -> list[dict]:
        """Instant query; the `result` vector (each item has `metric` labels and a `value` [ts, "v"])."""
        body = httpx.get(self.url + "/api/v1/query", params={"query": expr}, timeout=5).json()
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed: {body}")
        return body["data"]["result"]

    def wait_for(self, expr: str) -> list[dict]:
        """The query's result once it is non-empty (after the next scrapes)."""
        result: list[dict] = []

        def has_result() -> bool:
            nonlocal result
            result = self.query(expr)
            return bool(result)

        self._wait(has_result, f"a result for {expr}")
        return result
