"""Ending a started `omni` process the way an operator does: Ctrl-C, then a bounded wait."""

import signal
import subprocess


def interrupt_and_wait(process: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGINT (a no-op if it already exited), then its exit code; killed, and TimeoutExpired raised, if it hangs."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
