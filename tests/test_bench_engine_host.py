"""tools/bench_engine_host.py: the engine's own host time a step, with its streams in the steady state it claims."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import bench_engine_host  # noqa: E402


def test_each_stream_sends_one_steady_chunk_every_15_steps_and_the_table_says_so(capsys):
    """30 streams staggered over 15 phases: in 15 steps each sends exactly one 15-frame chunk, so 2 chunks a step."""
    assert bench_engine_host.main(["--rows", "30", "1", "--steps", "15"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| rows | _plan ms | _deliver ms | chunks a step |"
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    assert [r[0] for r in rows] == ["30", "1"]
    assert [r[3] for r in rows] == ["2.00", "0.07"]  # one stream that starts empty: its one chunk on the 15th step
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in rows)


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        bench_engine_host.main(["--rows", "0"])
