"""tools/compare_runs.py: repeated bench_stack runs read into one table of medians and ranges."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAN = float("nan")


def level_row(
    concurrency: int,
    audio: float,
    p99_ms: float,
    gap: float,
    failures: int = 0,
    rate: float = 0.0,
    early=None,
    to_handler=None,
    silence=None,
    engines=None,
) -> dict:
    """A results.json row; `early` (chunks sent early per request), `to_handler` (the first wave's way to the
    gateway's handler, p99 ms), `silence` (the gapped requests' silence p90, s) and `engines` (talker step ms,
    talker busy, codec tick ms, codec busy) only where given, as runs before sessions 17, 20 and 21, or without
    the engines' metrics."""
    since_17 = {"talker_early_chunks_per_request": early} if early is not None else {}
    since_20 = {"first_wave_before_handler_p99_ms": to_handler} if to_handler is not None else {}
    since_21 = {"gap_silence_p90_s": silence} if silence is not None else {}
    keys = ("talker_step_ms", "talker_busy", "codec_tick_ms", "codec_busy")
    measured = dict(zip(keys, engines, strict=True)) if engines is not None else {}
    return since_17 | since_20 | since_21 | measured | {
        "model": "1.7b", "gpus": "1", "concurrency": concurrency, "rate": rate, "audio_s_per_s": audio,
        "ttfa_p50_s": 0.1, "ttfa_p99_s": p99_ms / 1000, "underrun_pct": gap, "underrun_buffered_pct": NAN,
        "underrun_after_first_wave_pct": NAN if rate else gap / 2,  # an open loop has no first wave
        "requests_with_underrun": round(gap * 10),  # 1,000 requests a level
        "failures": {"http 500": failures} if failures else {}, "wrong_length_requests": [],
    }  # fmt: skip


def write_run(directory: Path, rows: list[dict]) -> Path:
    directory.mkdir(parents=True)
    (directory / "results.json").write_text(json.dumps({"settings": {}, "rows": rows}))
    return directory


def compare_runs(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "tools" / "compare_runs.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_runs_of_each_configuration_are_read_as_median_and_range(tmp_path):
    a1 = write_run(
        tmp_path / "A1",
        [
            level_row(128, 600.0, 240, 0, to_handler=103.2),
            level_row(512, 1100.0, 900, 20, failures=1, early=1.0, silence=0.12, engines=(27.16, 0.88, 69.35, 0.94)),
        ],
    )
    a2 = write_run(
        tmp_path / "A2",
        [
            level_row(128, 640.0, 220, 0),
            level_row(512, 1150.0, 1000, 10, early=2.0, silence=0.08, engines=(24.16, 0.87, 69.29, 0.96)),
        ],
    )
    a3 = write_run(tmp_path / "A3", [level_row(128, 620.0, 250, 0)])
    # The other configuration comes as the .tgz that the device's `save` writes, with an open-loop level.
    b = write_run(tmp_path / "B", [level_row(128, 700.0, 200, 0), level_row(0, 880.0, 290, 0.1, rate=96)])
    with tarfile.open(tmp_path / "B.tgz", "w:gz") as tar:
        tar.add(b, arcname="B")
    result = compare_runs(f"A={a1},{a2}", f"A={a3}", f"B={tmp_path / 'B.tgz'}")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| A") or line.startswith("| B")]
    none = "| - | - | - | - "  # runs without the engines' metrics
    assert rows == [
        "| A | 1.7b | 1 | 128 | 3 | 620.0 (600.0–640.0) | 100 (100–100) | 240 (220–250) | 0.0 (0.0–0.0) | 0 (0–0) | - "
        "| 0.0 (0.0–0.0) | - | 103 | - " + none + "| 0 |",
        "| B | 1.7b | 1 | 128 | 1 | 700.0 | 100 | 200 | 0.0 | 0 | - | 0.0 | - | - | - " + none + "| 0 |",
        "| A | 1.7b | 1 | 512 | 2 | 1125.0 (1100.0–1150.0) | 100 (100–100) | 950 (900–1000) | 15.0 (10.0–20.0) "
        "| 150 (100–200) | - | 7.5 (5.0–10.0) | 1.5 (1.0–2.0) | - | 100 (80–120) | 25.66 (24.16–27.16) "
        "| 0.88 (0.87–0.88) | 69.32 (69.29–69.35) | 0.95 (0.94–0.96) | 1 |",
        "| B | 1.7b | 1 | 96/s | 1 | 880.0 | 100 | 290 | 0.1 | 1 | - | - | - | - | - " + none + "| 0 |",
    ]


def test_bad_arguments_are_refused_with_a_message(tmp_path):
    for args, message in (
        (["no-equals-sign"], "expected LABEL=PATH"),
        ([f"A={tmp_path / 'missing'}"], "not a bench_stack output"),
        ([f"A={write_run(tmp_path / 'empty', [])}", f"B={tmp_path}"], "results.json"),
    ):
        result = compare_runs(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
