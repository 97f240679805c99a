"""Started `omni` processes: their output collected on a thread (`popen`, `Lines`), and ending them the way an
operator does (`interrupt_and_wait`: Ctrl-C, then a bounded wait)."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

START_TIMEOUT_S = 300
SERVE_READY = r"^Press Ctrl-C"  # the last line `omni serve` prints once every service is ready


class Lines:
    """A subprocess's merged output, collected by a thread; `wait_for(pattern)` returns the first match."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def wait_for(self, pattern: str, timeout_s: float = START_TIMEOUT_S) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            assert self.process.poll() is None, "exited:\n" + self.text()
            time.sleep(0.1)
        raise TimeoutError(f"no {pattern!r} in:\n{self.text()}")

    def text(self) -> str:
        if self.process.poll() is not None:
            self._thread.join(5)  # the rest of the output
        return "\n".join(self.lines)


def popen(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Lines]:
    """`omni <args>` with unbuffered output, collected by `Lines`; `env` replaces os.environ if given."""
    process = subprocess.Popen(
        [sys.executable, "-m", "omni.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"},
    )
    return process, Lines(process)


def interrupt_and_wait(process: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGINT (a no-op if it already exited), then its exit code; killed, and TimeoutExpired raised, if it hangs."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
