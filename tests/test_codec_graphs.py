"""The captured codec step (`codec_step`) is the math of `decode_streams`: checked eagerly on CPU.

Graph capture itself needs CUDA; tools/bench_codec.py checks graph replay == eager on the GPU.
"""

import itertools
import math
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the fused kernels run on CPU tensors

import random

import numpy as np
import pytest
import torch

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER, tiny_decoder_state
from omni.models.qwen3_tts.codec_graphs import (
    CodecGraphs,
    codec_step,
    fuse_residual_units,
    fuse_snakebeta,
    plan_replays,
)


@pytest.fixture(scope="module")
def decoder():
    cfg = CodecDecoderConfig(**{**TINY_DECODER, "sliding_window": 8})
    model = CodecDecoder(cfg)
    state = tiny_decoder_state(cfg, torch.Generator().manual_seed(5))
    model.load_state_dict({k.removeprefix("decoder."): v for k, v in state.items()})
    return model.eval()


# fp32; 1e-5 as in test_codec_streaming.py: a different batch size changes the convolutions' summation order.


def codes(frames: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 2048, (frames, 16), generator=torch.Generator().manual_seed(seed))


def test_codec_step_equals_decode_streams_with_padding_rows(decoder):
    # Slots 2 and 0 stream 3 chunks of 3, 1 and 2 frames (chunk lengths vary inside a padded step), beside two
    # padding rows on the scratch slot 4 with 0 frames, as a graph bucket of 4 would run them.
    eager, stepped = decoder.new_state(5), decoder.new_state(5)
    streams = {2: codes(6, 1), 0: codes(6, 2)}
    plan = [(3, 3), (1, 2), (2, 1)]
    done = {s: 0 for s in streams}
    for sizes in plan:
        chunks = [streams[s][done[s] : done[s] + n] for s, n in zip(streams, sizes, strict=True)]
        want = decoder.decode_streams(eager, list(streams), chunks)
        t = max(sizes)
        padded = torch.zeros(4, t, 16, dtype=torch.long)
        for i, c in enumerate(chunks):
            padded[i, : c.shape[0]] = c
        rows = torch.tensor([*streams, 4, 4])
        frames = torch.tensor([*sizes, 0, 0])
        with torch.no_grad():
            wav = codec_step(decoder, stepped, padded, rows, frames)
        for i, w in enumerate(want):
            torch.testing.assert_close(wav[i, : w.shape[0]], w, rtol=0, atol=1e-5)
        for s, n in zip(streams, sizes, strict=True):
            done[s] += n
    rows = [0, 2]
    assert torch.equal(eager.positions[rows], stepped.positions[rows])
    assert torch.equal(eager.key_positions[rows], stepped.key_positions[rows])
    torch.testing.assert_close(eager.key[:, rows], stepped.key[:, rows], rtol=0, atol=1e-5)
    torch.testing.assert_close(eager.value[:, rows], stepped.value[:, rows], rtol=0, atol=1e-5)
    for a, b in zip(eager.history, stepped.history, strict=True):
        torch.testing.assert_close(a[rows], b[rows], rtol=1e-4, atol=1e-5)  # vocoder activations, larger
    # Rows with 0 frames leave the scratch slot as it was (all zero: a fresh state).
    assert int(stepped.positions[4]) == 0 and torch.all(stepped.key_positions[4] == -1)
    assert torch.all(stepped.key[:, 4] == 0) and torch.all(stepped.value[:, 4] == 0)
    assert all(torch.all(h[4] == 0) for h in stepped.history)


def test_codec_step_marks_every_stage(decoder):
    state = decoder.new_state(2)
    seen = []
    with torch.no_grad():
        codec_step(decoder, state, codes(3, 7)[None], torch.tensor([0]), torch.tensor([3]), mark=seen.append)
    blocks = [f"vocoder.block{i}" for i in range(len(decoder.cfg.upsample_rates))]
    assert seen == ["rvq", "transformer", "upsample", "vocoder.in_conv", *blocks, "vocoder.out"]


def test_graphs_need_cuda_and_a_scratch_slot(decoder):
    with pytest.raises(ValueError, match="CUDA"):
        CodecGraphs(decoder, decoder.new_state(17), buckets=(16,), chunk_lengths=(1,))


def test_a_step_split_over_several_replays_equals_eager_decoding(decoder):
    # 11 streams over buckets 2 and 8 (capture=False: the graphs' static buffers, scratch rows and replay plans,
    # with codec_step run where a graph would replay). Mixed chunk lengths: first chunks, ramp chunks, full ones,
    # and a stream that sends nothing in one step. Steps alternate between tensors in, rows out (decode_streams) and
    # numpy in, whole replay outputs out (decode_step).
    streams = 11
    graphs = CodecGraphs(decoder, decoder.new_state(streams + 1), buckets=(2, 8), chunk_lengths=(1, 4), capture=False)
    eager = decoder.new_state(streams)
    steps = [[1] * streams, [4, 2, 4, 1, 3] * 2 + [4], [1, 4, 4] * 3 + [4, 1]]
    sources = [codes(9, 40 + i) for i in range(streams)]
    done = [0] * streams
    replays = []
    for lengths in steps:
        chunks = [sources[i][done[i] : done[i] + n] for i, n in enumerate(lengths)]
        replays.append(plan_replays(lengths, graphs.replay_ms))
        replayed = sum(b * t for b, t, _ in replays[-1])
        want = decoder.decode_streams(eager, list(range(streams)), chunks)
        if len(replays) % 2:  # the engine's way: numpy codes in, each replay's output whole
            step = graphs.decode_step(list(range(streams)), [c.numpy() for c in chunks])
            assert len(step.blocks) == len(replays[-1])
            got = [step.wave(i) for i in range(streams)]
        else:
            got = graphs.decode_streams(list(range(streams)), chunks)
        assert graphs.planned_frames == replayed >= sum(lengths)  # what the replays computed, padding included
        for g, w, n in zip(got, want, lengths, strict=True):
            assert g.shape == w.shape == (n * decoder.samples_per_frame,)
            torch.testing.assert_close(g, w, rtol=0, atol=1e-5)
        done = [d + n for d, n in zip(done, lengths, strict=True)]
    assert all(len(plan) > 1 for plan in replays)  # every step really was split
    for a, b in zip(eager.history, graphs.state.history, strict=True):
        torch.testing.assert_close(a, b[:streams], rtol=1e-4, atol=1e-5)
    # The scratch slot only ever saw 0-frame rows: still a fresh state.
    assert int(graphs.state.positions[streams]) == 0 and all(torch.all(h[streams] == 0) for h in graphs.state.history)


def test_a_code_out_of_range_is_refused_before_any_replay(decoder):
    # The replays' inputs are checked on the host as they are staged: a bad code in the second replay of a split
    # step raises, and no row of that replay was decoded.
    graphs = CodecGraphs(decoder, decoder.new_state(4), buckets=(1, 2), chunk_lengths=(1,), capture=False)
    bad = codes(1, 7)
    bad[0, 3] = 2048
    with pytest.raises(ValueError, match=r"\[0, 2048\)"):
        graphs.decode_streams([0, 1, 2], [codes(1, 5), codes(1, 6), bad])
    assert int(graphs.state.positions[2]) == 0


def test_codes_of_the_wrong_type_or_shape_are_refused_before_any_replay(decoder):
    graphs = CodecGraphs(decoder, decoder.new_state(4), buckets=(1, 2), chunk_lengths=(1,), capture=False)
    good = codes(1, 5).numpy()
    with pytest.raises(ValueError, match="integers"):
        graphs.decode_step([0, 1], [good, good.astype(np.float32)])
    with pytest.raises(ValueError, match=r"shape \[T, 16\]"):
        graphs.decode_step([0, 1], [good, good[:, :8]])
    assert int(graphs.state.positions[0]) == 0  # nothing was decoded


def test_fused_vocoder_equals_eager():
    # A decoder of its own (fusing rebinds its modules' forward). Two steps, so the fused units also read back the
    # conv history they wrote.
    cfg = CodecDecoderConfig(**{**TINY_DECODER, "decoder_dim": 32})  # the interpreter runs one program per row
    model = CodecDecoder(cfg)
    weights = tiny_decoder_state(cfg, torch.Generator().manual_seed(6))
    model.load_state_dict({k.removeprefix("decoder."): v for k, v in weights.items()})
    model.eval()
    steps = [[codes(1, 11)], [codes(1, 12)]]
    eager_state = model.new_state(1)
    want = [model.decode_streams(eager_state, [0], chunks)[0] for chunks in steps]
    assert fuse_snakebeta(model) == 29 and fuse_residual_units(model) == 12
    fused_state = model.new_state(1)
    got = [model.decode_streams(fused_state, [0], chunks)[0] for chunks in steps]
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-5)
    for a, b in zip(eager_state.history, fused_state.history, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# Replay times shaped as measured on an H200 (per row cheaper at larger buckets, a fixed cost per launch); the
# max_streams bucket (640) costs what its rows cost.
BUCKET_MS = {1: 1.0, 4: 1.3, 16: 2.5, 64: 7.0, 128: 13.0, 640: 60.0}
COSTS = {(b, t): ms * (1.0 if t == 15 else 0.25) for b, ms in BUCKET_MS.items() for t in (1, 15)}


def cost(plan):
    return sum(COSTS[b, t] for b, t, _ in plan)


def check_plan(plan, lengths):
    """Every row in exactly one replay, which holds it: no more rows than its bucket, no chunk over its length."""
    rows = sorted(i for _, _, replay_rows in plan for i in replay_rows)
    assert rows == list(range(len(lengths)))
    for bucket, chunk, replay_rows in plan:
        assert 0 < len(replay_rows) <= bucket and all(lengths[i] <= chunk for i in replay_rows)


def buckets_of(plan):
    return sorted((b for b, _, _ in plan), reverse=True)


def test_steps_of_full_chunks_take_the_cheapest_sum_of_buckets():
    assert buckets_of(plan_replays([15] * 263, COSTS)) == [128, 128, 16]  # 28 ms, not one 640-row replay (60 ms)
    assert buckets_of(plan_replays([15] * 128, COSTS)) == [128]
    assert buckets_of(plan_replays([15] * 3, COSTS)) == [4]  # a 4-row replay is cheaper than three 1-row ones
    assert buckets_of(plan_replays([15] * 640, COSTS)) == [640]  # five 128-row replays would take 65 ms
    assert buckets_of(plan_replays([15] * 1500, COSTS)) == [640, 640, 128, 64, 16, 16]


def cheapest_by_search(lengths, costs):
    """The least cost over every split of the rows into replays (each at its cheapest graph that holds it)."""

    def replay_cost(rows):
        fits = [c for (b, t), c in costs.items() if b >= len(rows) and t >= max(lengths[i] for i in rows)]
        return min(fits, default=math.inf)

    def search(rows):
        if not rows:
            return 0.0
        first, rest = rows[0], rows[1:]
        best = math.inf
        for k in range(len(rest) + 1):  # the replay holding the first row, with k of the others
            for together in itertools.combinations(rest, k):
                others = [r for r in rest if r not in together]
                best = min(best, replay_cost([first, *together]) + search(others))
        return best

    return search(list(range(len(lengths))))


def test_plans_cost_the_least_of_every_split_of_the_rows():
    # Small steps against an exhaustive search, with costs whose cheapest plans are irregular: a fixed cost per
    # replay, per-row costs that fall with the bucket, and a chunk length that costs more than the next one up.
    costs = {(b, t): 0.4 + b * t * (0.05 if b >= 4 else 0.08) for b in (1, 2, 4) for t in (1, 4, 8)}
    costs[2, 4] = costs[2, 8] + 0.01  # not monotone in the chunk length: the planner must still find the 8
    rng = random.Random(3)
    for _ in range(150):
        lengths = [rng.choice((1, 2, 4, 7, 8)) for _ in range(rng.randint(1, 6))]
        plan = plan_replays(lengths, costs)
        check_plan(plan, lengths)
        assert sum(costs[b, t] for b, t, _ in plan) == pytest.approx(cheapest_by_search(lengths, costs))
    # A longer chunk's graph that replays faster than the shorter one (timing noise at capture) is the one taken.
    assert [(b, t) for b, t, _ in plan_replays([4, 3], {(2, 4): 3.0, (2, 8): 1.0})] == [(2, 8)]


def test_first_chunks_fill_the_spare_rows_of_full_chunks():
    lengths = [15] * 100 + [1] * 3  # three new streams' first chunks in a tick of steady ones
    plan = plan_replays(lengths, COSTS)
    check_plan(plan, lengths)
    assert [(b, t) for b, t, _ in plan] == [(128, 15)]


def test_first_chunks_get_their_own_short_replay_when_that_is_cheaper():
    lengths = [15] * 64 + [1] * 60  # one padded 128x15 replay (13 ms) against 64x15 + 64x1 (7 + 1.75 ms)
    plan = plan_replays(lengths, COSTS)
    check_plan(plan, lengths)
    assert sorted((b, t) for b, t, _ in plan) == [(64, 1), (64, 15)]


def test_chunks_longer_than_every_graph_run_eagerly():
    assert plan_replays([15, 16], COSTS) is None
    assert plan_replays([], COSTS) is None


def test_plans_never_cost_more_than_one_padded_replay():
    # The old rule (the one smallest graph that holds the whole step) is always a candidate, so never beaten.
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 640)
        lengths = [rng.choice((1, 2, 4, 8, 15, 15, 15)) for _ in range(n)]
        plan = plan_replays(lengths, COSTS)
        check_plan(plan, lengths)
        one_graph = (next(b for b in BUCKET_MS if b >= n), 1 if max(lengths) == 1 else 15)
        assert cost(plan) <= COSTS[one_graph] + 1e-9


def test_codec_graph_buckets_are_capped_at_max_streams_with_no_max_streams_graph():
    from omni.services.codec.engine import codec_graph_buckets

    default = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert codec_graph_buckets(default, 640) == default  # 300 streams split into 256 + 32 + 8 + 4, say
    assert codec_graph_buckets(default, 100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert codec_graph_buckets([16, 4, 4], 3) == [3]
    # Every step size up to max_streams has a plan over these buckets.
    costs = {(b, t): b * t + 1.0 for b in codec_graph_buckets(default, 640) for t in (1, 15)}
    for n in (1, 257, 640):
        plan = plan_replays([15] * n, costs)
        check_plan(plan, [15] * n)


def test_bench_codec_ticks_tool_plans_and_overlaps_a_tick_and_keeps_its_audio(tmp_path):
    """tools/bench_codec_ticks.py (a GPU measurement) on this CPU: a tick with its small replays taken from a second
    set of graphs (the side stream's, on a GPU) leaves the audio and state the serial tick does, some of its replays
    did go to the side, and today's plan costs no more than the previous planner's."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "ticks.json"
    command = [sys.executable, str(root / "tools/bench_codec_ticks.py"), "--device", "cpu", "--rows", "6"]
    run = subprocess.run(
        [*command, "--ticks", "1", "--iters", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=root,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["check"]["wav_equal"] and report["check"]["state_equal"]
    assert report["check"]["side_replays"] == report["check"]["side_replays_planned"] >= 1
    (row,) = report["rows"]
    assert row["rows"] == 6 and 1 <= row["side_replays"] < len(row["planned_plan"])
    assert row["planned_capture_ms"] <= row["previous_capture_ms"]


def test_bench_codec_ticks_ab_times_a_switch_on_realistic_ticks_and_checks_its_audio(tmp_path):
    """tools/bench_codec_ticks.py --ab on this CPU: a bitwise switch (window_pair_kernel) decodes the tick as the base
    does and gets a table row per row count with every round timed both ways; a switch that sums in another order
    (attention_kernel) is caught by the same check, so the on side did run with its switch."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, str(root / "tools/bench_codec_ticks.py"), "--device", "cpu", "--rows", "5", "3"]
    command += ["--ticks", "1", "--iters", "1", "--ab-rounds", "2"]
    env = {**os.environ, "TRITON_INTERPRET": "1"}  # the switches' Triton kernels on the CPU
    reports = {}
    for switch in ("window_pair_kernel", "attention_kernel"):
        out = tmp_path / f"{switch}.json"
        run = subprocess.run(
            [*command, "--ab", switch, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=root,
            env=env,
        )
        (reports[switch],) = [(run, ab) for ab in json.loads(out.read_text())["ab"]]
    run, pair = reports["window_pair_kernel"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert pair["switches"] == ["window_pair_kernel"] and pair["check"] == {"wav_equal": True, "state_equal": True}
    assert [row["rows"] for row in pair["rows"]] == [5, 3]
    for row in pair["rows"]:
        assert all(len(row["rounds"][side]) == 2 and min(row["rounds"][side]) > 0 for side in ("base", "on"))
        assert row["replays"]["base"] >= 1 and row["replays"]["on"] >= 1
    run, attention = reports["attention_kernel"]
    assert run.returncode != 0 and "CHECK FAILED" in run.stderr
    assert not attention["check"]["wav_equal"]
    run = subprocess.run([*command, "--ab", "window_pair_kernel,nope"], capture_output=True, text=True, timeout=300,
                         cwd=root, env=env)  # fmt: skip
    assert run.returncode != 0 and "['nope'] not among the decoder's kernel switches" in run.stderr


def test_bench_codec_ticks_lists_a_replays_dearest_kernels_first():
    """`--kernels`' table (tools/bench_codec_ticks.dearest_kernels): by summed device time, dearest first, each with its
    share of the replay's time and its launches, at most `top` rows."""
    from tests.tool_modules import load_tool

    census = {"device_us": 200.0, "by_name": {"snake": [29, 30.0], "conv_k7": [12, 150.0], "add": [3, 20.0]}}
    rows = load_tool("bench_codec_ticks").dearest_kernels(census, top=2)
    assert rows == ["| 75.0% | 150.0 | 12 | conv_k7 |", "| 15.0% | 30.0 | 29 | snake |"]


def test_bench_codec_ticks_refuses_a_kernels_graph_it_did_not_capture():
    """`--kernels 4x2` where the chunk lengths are 1, 4, 8, 15: a clear refusal naming the graphs the build captures,
    before it builds them (its first line, the build's, is not printed): run 227 stopped on a KeyError there, after a
    build of ~180 s and its first census."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, str(root / "tools/bench_codec_ticks.py"), "--device", "cpu", "--rows", "5"]
    run = subprocess.run([*command, "--kernels", "4x4", "4x2"], capture_output=True, text=True, timeout=300, cwd=root)
    assert run.returncode != 0 and run.stdout == ""
    assert "--kernels ['4x2']: no such graph; captured: 1x1 1x4" in run.stderr and "4x15" in run.stderr
