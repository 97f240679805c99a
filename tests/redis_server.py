"""A real `redis-server` for tests: loopback only, a free port, its own data directory.

Usage:
    with RedisServer(tmp_path) as server:   # AOF on, appendfsync always (the chart's durability settings)
        client = redis.Redis.from_url(server.url)
        server.kill()     # SIGKILL: no shutdown save, only what is already on disk survives
        server.start()    # same port, same data dir
"""

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from omni.commands.serve import free_port


class RedisServer:
    def __init__(
        self,
        data_dir: str | Path | None = None,
        port: int | None = None,
        appendonly: bool = True,
        appendfsync: str = "always",
        extra_args: tuple[str, ...] = (),
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found; install it with `apt-get install -y redis-server`")
        self._binary = binary
        self._own_dir = data_dir is None
        self.data_dir = Path(tempfile.mkdtemp(prefix="omni-redis-") if data_dir is None else data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.extra_args = extra_args
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, wait_s: float = 20.0) -> "RedisServer":
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("redis-server is already running")
        args = [
            self._binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--save", "",  # no RDB snapshots: the AOF alone is what survives
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(self.data_dir / "redis.log"),
            *self.extra_args,
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + wait_s
        try:
            while True:
                if self.process.poll() is not None:
                    log = (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"redis-server exited with {self.process.returncode}: {log}")
                try:
                    # Up, and done loading the AOF (LOADING errors until then).
                    if client.ping():
                        return self
                except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(f"redis-server did not answer on port {self.port} within {wait_s} s")
                time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        """Graceful stop (SIGTERM)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None

    def kill(self) -> None:
        """SIGKILL, like a crashed node: nothing is flushed at exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
