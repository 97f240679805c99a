"""Repeated bench_stack runs side by side: per configuration and level, the median and range of what we compare.

    python tools/compare_runs.py default=/tmp/D1,/tmp/D2 budget1536=/work/.device/3/B15b.tgz,/work/.device/3/B15c.tgz

Each argument is LABEL=PATH[,PATH...]; a path is a bench_stack `--out` directory (its results.json) or the .tgz that
tools/device/setup.sh's `save` makes of one. One markdown row per (label, model, GPUs, level): the number of runs,
then audio-s/s, TTFA p50 and p99, the share of requests with a gap played from the first byte and their count, the
share with a 100 ms buffer, and (a closed loop) among the requests started after the first wave, the chunks per
request the talker sent early (min_lead_ms), the opening wave's way to the gateway's handler (p99), how long the
gapped requests were silent (p90 over them), the talker's step and the codec's tick with each engine's busy share,
each as "median (min–max)" when there are several runs, and the failures summed over the runs.

Why: one run says little on these machines (docs/benchmarks.md keeps what is known of the spread), so an A/B is
several interleaved stacks of each side, and this reads them the same way every time instead of by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path
from statistics import median

# (results.json key, column title, scale, format)
FIGURES = [
    ("audio_s_per_s", "audio-s/s", 1.0, ".1f"),
    ("ttfa_p50_s", "TTFA p50 ms", 1000.0, ".0f"),
    ("ttfa_p99_s", "TTFA p99 ms", 1000.0, ".0f"),
    # one decimal and the count: a rule's "no gap" is no gapped request (session 24: one of 3,072 read "0 %")
    ("underrun_pct", "gap %", 1.0, ".1f"),
    ("requests_with_underrun", "gapped requests", 1.0, ".0f"),
    ("underrun_buffered_pct", "gap % (100 ms buffer)", 1.0, ".1f"),
    ("underrun_after_first_wave_pct", "gap % after the first wave", 1.0, ".1f"),  # closed loops, since session 15
    ("talker_early_chunks_per_request", "early chunks per request", 1.0, ".1f"),  # min_lead_ms, since session 17
    ("first_wave_before_handler_p99_ms", "first wave to handler p99 ms", 1.0, ".0f"),  # closed loops, since session 20
    ("gap_silence_p90_s", "gapped requests' silence p90 ms", 1000.0, ".0f"),  # since session 21
    # which of the two engines sharing a GPU sets the pace (session 23: it moved with each step's speed-up)
    ("talker_step_ms", "talker step ms", 1.0, ".2f"),
    ("talker_busy", "talker busy", 1.0, ".2f"),
    ("codec_tick_ms", "codec tick ms", 1.0, ".2f"),
    ("codec_busy", "codec busy", 1.0, ".2f"),
]


def load_rows(path: Path) -> list[dict]:
    """The level rows of one run: PATH/results.json, or the one results.json inside a .tgz."""
    if path.is_dir():
        return json.loads((path / "results.json").read_text())["rows"]
    if path.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(path) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and Path(m.name).name == "results.json"]
            if len(members) != 1:
                raise ValueError(f"{path}: expected one results.json, found {len(members)}")
            return json.load(tar.extractfile(members[0]))["rows"]
    raise ValueError(f"{path}: not a bench_stack output directory or .tgz")


def level_of(row: dict) -> tuple[int, float, str]:
    """Sort key and name of a row's level: closed-loop concurrency, or an open-loop rate."""
    if row.get("rate"):
        return (1, row["rate"], f"{row['rate']:g}/s")
    return (0, row["concurrency"], str(row["concurrency"]))


def spread(values: list[float], scale: float, fmt: str) -> str:
    values = [v * scale for v in values if v is not None and v == v]  # NaN: a figure the level did not have
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def compare(runs: dict[str, list[list[dict]]]) -> str:
    """runs: label -> the rows of each of its runs. Returns the markdown table."""
    groups: dict[tuple, list[dict]] = {}
    for label_index, (label, label_runs) in enumerate(runs.items()):
        for rows in label_runs:
            for row in rows:
                kind, value, name = level_of(row)
                key = (row["model"], str(row["gpus"]), kind, value, label_index, label, name)
                groups.setdefault(key, []).append(row)
    titles = ["config", "model", "GPUs", "level", "runs", *(title for _, title, _, _ in FIGURES), "failures"]
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for (model, gpus, _, _, _, label, name), rows in sorted(groups.items()):
        cells = [label, model, gpus, name, str(len(rows))]
        cells += [spread([r.get(key) for r in rows], scale, fmt) for key, _, scale, fmt in FIGURES]
        cells.append(str(sum(sum(r["failures"].values()) + len(r["wrong_length_requests"]) for r in rows)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_runs(specs: list[str]) -> dict[str, list[list[dict]]]:
    runs: dict[str, list[list[dict]]] = {}
    for spec in specs:
        label, sep, paths = spec.partition("=")
        if not sep or not label or not paths:
            raise ValueError(f"{spec!r}: expected LABEL=PATH[,PATH...]")
        runs.setdefault(label, []).extend(load_rows(Path(p)) for p in paths.split(",") if p)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=PATH[,PATH...]")
    args = parser.parse_args(argv)
    try:
        runs = parse_runs(args.runs)
    except (OSError, ValueError, KeyError) as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return 2
    print(compare(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
