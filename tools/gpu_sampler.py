"""GPU utilization, power and SM clock sampled by `nvidia-smi` while a benchmark runs, averaged over time windows.

`utilization.gpu` is the share of nvidia-smi's sample period in which a kernel of any process ran: near 100%, the GPU
never waited for the host between the talker's and the codec's work, so a stack's distance from the step benchmarks'
ceiling lies in the work itself (padding, short chunks, prefills, the processes' turns), not in idle time. Power
against the board's limit says how hard the kernels drove it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

QUERY = "timestamp,index,utilization.gpu,power.draw,clocks.sm"
TIME_FORMAT = "%Y/%m/%d %H:%M:%S.%f"  # nvidia-smi's timestamp, in the machine's local time


@dataclass(frozen=True)
class GpuSample:
    time_s: float  # seconds since the epoch, comparable with time.time()
    gpu: int
    util_pct: float
    power_w: float
    sm_mhz: float


def parse_samples(lines: list[str]) -> list[GpuSample]:
    """Rows of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; a row with a field nvidia-smi could
    not read ("[N/A]", "[Unknown Error]") or cut short by the sampler's stop is skipped."""
    samples = []
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5:
            continue
        try:
            when = datetime.strptime(fields[0], TIME_FORMAT).timestamp()
            samples.append(GpuSample(when, int(fields[1]), *(float(f) for f in fields[2:])))
        except ValueError:
            continue
    return samples


def window_means(samples: list[GpuSample], start_s: float, end_s: float) -> dict[str, float]:
    """Per GPU, the mean utilization (%), power (W) and SM clock (MHz) of the samples taken in [start_s, end_s]."""
    out: dict[str, float] = {}
    for gpu in sorted({s.gpu for s in samples}):
        inside = [s for s in samples if s.gpu == gpu and start_s <= s.time_s <= end_s]
        if not inside:
            continue
        out[f"gpu{gpu}_util_pct"] = sum(s.util_pct for s in inside) / len(inside)
        out[f"gpu{gpu}_power_w"] = sum(s.power_w for s in inside) / len(inside)
        out[f"gpu{gpu}_sm_mhz"] = sum(s.sm_mhz for s in inside) / len(inside)
        out[f"gpu{gpu}_samples"] = float(len(inside))
    return out


class GpuSampler:
    """`nvidia-smi --loop-ms=period_ms` in the background from `with` to its end; `means(start_s, end_s)` averages the
    samples of a window. Without nvidia-smi on the PATH (a CPU machine), or with `executable=None`, it samples nothing
    and `means` is {}."""

    def __init__(self, period_ms: int = 200, executable: str | None = "nvidia-smi"):
        self.period_ms = period_ms
        self.executable = shutil.which(executable) if executable else None
        self.proc: subprocess.Popen | None = None
        self.path: Path | None = None

    def __enter__(self) -> GpuSampler:
        if self.executable is not None:
            handle, name = tempfile.mkstemp(prefix="gpu-samples-", suffix=".csv")
            self.path = Path(name)
            command = [self.executable, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
            command += [f"--loop-ms={self.period_ms}"]
            # Line-buffered, so a window's samples are in the file when the window ends (a file is block-buffered).
            stdbuf = shutil.which("stdbuf")
            command = [stdbuf, "-oL", *command] if stdbuf else command
            self.proc = subprocess.Popen(command, stdout=handle, stderr=subprocess.DEVNULL)
            os.close(handle)
        return self

    def means(self, start_s: float, end_s: float) -> dict[str, float]:
        if self.path is None:
            return {}
        return window_means(parse_samples(self.path.read_text().splitlines()), start_s, end_s)

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)  # how nvidia-smi's loop is meant to end
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
