"""tools/gpu_sampler.py: nvidia-smi's sample rows read back and averaged over a benchmark level's window. The
sampling itself needs a GPU machine's nvidia-smi; here its rows (as `--format=csv,noheader,nounits` prints them) are
parsed, and the sampler without nvidia-smi samples nothing."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.tool_modules import load_tool


def load_gpu_sampler():
    return load_tool("gpu_sampler")


def stamp(seconds: float) -> str:
    """A wall-clock time as nvidia-smi prints it (local time, milliseconds)."""
    return datetime.fromtimestamp(seconds).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def test_rows_are_parsed_and_unreadable_or_cut_rows_skipped():
    sampler = load_gpu_sampler()
    t = 1_796_000_000.25
    lines = [
        f"{stamp(t)}, 0, 97, 612.40, 1980",
        f"{stamp(t)}, 1, 3, 98.10, 345",
        f"{stamp(t + 0.2)}, 0, [N/A], 600.00, 1980",  # a field nvidia-smi could not read
        f"{stamp(t + 0.4)}, 0, 100",  # cut short when the sampler stopped
        "",
    ]
    samples = sampler.parse_samples(lines)
    assert [(s.gpu, s.util_pct, s.power_w, s.sm_mhz) for s in samples] == [
        (0, 97.0, 612.4, 1980.0),
        (1, 3.0, 98.1, 345.0),
    ]
    assert samples[0].time_s == pytest.approx(t, abs=1e-3)


def test_window_means_are_per_gpu_and_only_inside_the_window():
    sampler = load_gpu_sampler()
    t = 1_796_000_000.0
    rows = [(-1.0, 0, 10, 100), (0.0, 0, 90, 600), (0.5, 0, 100, 700), (1.0, 0, 80, 650), (2.0, 0, 0, 90)]
    rows += [(0.5, 1, 40, 300)]
    lines = [f"{stamp(t + dt)}, {gpu}, {util}, {power}, 1980" for dt, gpu, util, power in rows]
    means = sampler.window_means(sampler.parse_samples(lines), t, t + 1.0)
    assert means["gpu0_util_pct"] == pytest.approx(90.0) and means["gpu0_power_w"] == pytest.approx(650.0)
    assert means["gpu0_samples"] == 3 and means["gpu0_sm_mhz"] == 1980
    assert means["gpu1_util_pct"] == 40 and means["gpu1_samples"] == 1
    # A window with no sample of a GPU leaves that GPU out rather than reporting zeros.
    assert sampler.window_means(sampler.parse_samples(lines), t + 1.5, t + 1.9) == {}


def test_without_nvidia_smi_the_sampler_samples_nothing(tmp_path, monkeypatch):
    sampler = load_gpu_sampler()
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no nvidia-smi, as on a CPU machine
    for made in (sampler.GpuSampler(), sampler.GpuSampler(executable=None)):
        with made as running:
            assert running.proc is None
            assert running.means(0.0, time.time()) == {}
