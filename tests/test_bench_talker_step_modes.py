"""tools/bench_talker_step.py's --modes: every extra its help names is accepted, an unknown one stops the run before
any GPU work (session 38's first device call lost a machine start to `+fused-draws` missing from the accepted set)."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_talker_step", ROOT / "tools" / "bench_talker_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_extra_named_in_the_help_parses():
    bench = load_bench()
    source = (ROOT / "tools" / "bench_talker_step.py").read_text()
    named = set(re.findall(r"\+([a-z][a-z-]*[a-z])", source.split("modes_help = (")[1].split("\n    )")[0]))
    assert {"kv-write", "fused-draws", "rope-per-forward"} <= named  # the help's extras were found
    assert named <= bench.MODE_EXTRAS
    every = "fused+" + "+".join(sorted(bench.MODE_EXTRAS))
    assert bench.parse_modes(f"{every},sdpa,kernel") == ["sdpa", "kernel", every]  # fused modes last, order kept


@pytest.mark.parametrize("modes", ["fused+fused-draw", "kernel+sampler", "fast", "sdpa,fused+sampler+nope"])
def test_an_unknown_mode_stops_the_run(modes):
    with pytest.raises(SystemExit, match="unknown modes"):
        load_bench().parse_modes(modes)
