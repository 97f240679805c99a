"""`omni bench`: the statistics by hand, the inputs, and one real run against an `omni serve` tiny stack."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from omni.bench import (
    BenchConfig,
    RequestResult,
    Share,
    default_texts,
    first_gap_at,
    format_table,
    merge_results,
    parse_meta_lst,
    percentile,
    request_body,
    split_evenly,
    split_level,
    summarize,
    underrun_seconds,
)
from omni.cli import main
from omni.client import SpeechClient
from tests.processes import SERVE_READY, interrupt_and_wait, popen

READY_TIMEOUT_S = 300


def test_percentile_interpolates_between_ranks():
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 50) == pytest.approx(2.5)  # halfway between 2 and 3
    assert percentile(values, 90) == pytest.approx(3.7)  # position 2.7: 3 + 0.7 * (4 - 3)
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 25) == pytest.approx(20.0)  # position exactly 1
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError, match="percentile q"):
        percentile([1.0], 101)


def test_underrun_counts_only_gaps_after_playback_starts():
    # Chunks of 1 s arriving every 0.5 s: the player never starves, however late the first chunk is.
    assert underrun_seconds([3.0, 3.5, 4.0], [1.0, 1.0, 1.0]) == 0.0
    # 1 s chunks at t=0, 2.5, 3.0: playback ends at 1.0, the second chunk comes 1.5 s late; then it plays until
    # 3.5 and the third chunk (3.0) is early.
    assert underrun_seconds([0.0, 2.5, 3.0], [1.0, 1.0, 1.0]) == pytest.approx(1.5)
    # Two gaps: 0.5 s chunks at 0, 1, 2 -> starves 0.5 s before each later chunk.
    assert underrun_seconds([0.0, 1.0, 2.0], [0.5, 0.5, 0.5]) == pytest.approx(1.0)
    # A buffer built up earlier absorbs a later late chunk: 2 s, then 0.1 s at 1.5, then at 2.05 (plays till 2.1).
    assert underrun_seconds([0.0, 1.5, 2.05], [2.0, 0.1, 0.1]) == 0.0
    assert underrun_seconds([], []) == 0.0
    with pytest.raises(ValueError, match="same length"):
        underrun_seconds([0.0], [])


def test_a_playout_buffer_absorbs_early_jitter_but_not_starvation():
    # 80 ms first chunk, then 160 ms at 0.1 s, 320 ms at 0.3 s: at once the player starves 20 + 40 ms; started
    # 100 ms late it plays the first chunk until 0.18 s, the second until 0.34 s: no gap.
    arrivals, durations = [0.0, 0.1, 0.3], [0.08, 0.16, 0.32]
    assert underrun_seconds(arrivals, durations) == pytest.approx(0.06)
    assert underrun_seconds(arrivals, durations, buffer_s=0.1) == 0.0
    # A chunk 1 s late starves any small buffer: 0.1 s played, the next at 1.2 s -> 1.1 s - 0.1 s buffer = 1.0 s.
    assert underrun_seconds([0.0, 1.2], [0.1, 0.1], buffer_s=0.1) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="buffer_s"):
        underrun_seconds([0.0], [0.1], buffer_s=-0.1)


def test_the_first_gap_is_placed_in_seconds_of_audio_played_before_it():
    # 0.16 s first chunk, then 0.16 s at 0.1 (in time), 0.32 s at 0.5 (late: playback ran out at 0.32): the gap comes
    # after 0.32 s of audio; later gaps do not move it.
    assert first_gap_at([0.0, 0.1, 0.5, 5.0], [0.16, 0.16, 0.32, 1.0]) == pytest.approx(0.32)
    assert first_gap_at([0.0, 0.1, 0.2], [0.16, 0.16, 0.32]) is None  # never starves
    assert first_gap_at([2.0, 4.5], [1.0, 1.0]) == pytest.approx(
        1.0
    )  # a late first chunk is not a gap, a late second is
    assert first_gap_at([], []) is None
    with pytest.raises(ValueError, match="same length"):
        first_gap_at([0.0], [])
    # The level's figures are over the requests that had a gap.
    results = [
        RequestResult(i, "200", True, 0.0, 0.1, 1.0, 1.0, underrun_s=u, first_gap_at_s=g)
        for i, (g, u) in enumerate([(None, 0.0), (0.2, 0.05), (0.6, 0.25)])
    ]
    s = summarize(results, elapsed_s=1.0)
    assert s["first_gap_at_p50_s"] == pytest.approx(0.4) and s["first_gap_at_p90_s"] == pytest.approx(0.56)
    # the silence of the two gapped requests (the ungapped one is not a zero in it)
    assert s["gap_silence_p50_s"] == pytest.approx(0.15) and s["gap_silence_max_s"] == pytest.approx(0.25)
    assert math.isnan(summarize(results[:1], elapsed_s=1.0)["gap_silence_max_s"])


def test_summarize_aggregates_successes_and_counts_failures_by_status():
    def ok(index: int, ttfa: float, total: float, audio: float, underrun: float) -> RequestResult:
        return RequestResult(index, "200", True, 0.0, ttfa, total, audio, total / audio, underrun)

    results = [
        ok(0, 0.1, 1.0, 2.0, 0.0),
        ok(1, 0.3, 2.0, 2.0, 0.25),
        RequestResult(2, "503", False, 0.0, error="talker overloaded"),
        RequestResult(3, "503", False, 0.0),
        RequestResult(4, "error:ConnectError", False, 0.0),
    ]
    s = summarize(results, elapsed_s=4.0)
    assert (s["requests"], s["succeeded"], s["failed"]) == (5, 2, 3)
    assert s["failures"] == {"503": 2, "error:ConnectError": 1}
    assert s["failure_examples"]["503"] == "talker overloaded"
    assert s["requests_per_s"] == pytest.approx(0.5)
    assert s["audio_s_per_s"] == pytest.approx(1.0)  # 4 audio seconds in 4 s
    assert s["ttfa_p50_s"] == pytest.approx(0.2)
    assert s["ttfa_p99_s"] == pytest.approx(0.298)
    assert s["rtf_p50"] == pytest.approx(0.75)  # rtf 0.5 and 1.0
    assert s["underrun_total_s"] == pytest.approx(0.25)
    assert s["requests_with_underrun"] == 1 and s["requests_with_underrun_buffered"] == 0
    results[1].underrun_buffered_s = 0.05
    assert summarize(results, elapsed_s=4.0)["requests_with_underrun_buffered"] == 1
    table = format_table({"mode": "closed", "levels": [{**s, "concurrency": 4}]})
    assert "503: talker overloaded" in table and "concurrency" in table


def test_ttfa_after_the_first_wave_leaves_out_the_requests_that_started_together():
    # A closed loop at concurrency 2: the first two requests start at once (a burst of prefills), later ones as
    # earlier ones end. Indexes need not follow start times (several client processes number their own shares).
    def ok(index: int, start: float, ttfa: float) -> RequestResult:
        return RequestResult(index, "200", True, start, ttfa, 1.0, 1.0, 1.0)

    results = [ok(5, 0.0, 0.9), ok(0, 0.0, 0.8), ok(1, 1.0, 0.1), ok(2, 1.2, 0.3), ok(3, 2.0, 0.2)]
    results[0].underrun_s = results[1].underrun_s = 0.05  # both of the first wave had a gap, one of the three later
    results[3].underrun_s = 0.02
    steady = summarize(results, elapsed_s=3.0, first_wave=2)
    assert steady["underrun_after_first_wave_pct"] == pytest.approx(100 / 3)
    assert steady["requests_with_underrun"] == 3
    assert steady["ttfa_after_first_wave_p50_s"] == pytest.approx(0.2)
    assert steady["ttfa_after_first_wave_p99_s"] == pytest.approx(0.298)
    assert steady["ttfa_p99_s"] > 0.85  # the burst is still in the overall figure
    opened = summarize(results, elapsed_s=3.0)  # open loop: no first wave
    assert math.isnan(opened["ttfa_after_first_wave_p50_s"]) and math.isnan(opened["underrun_after_first_wave_pct"])


def test_streams_in_flight_are_counted_over_the_level_and_at_the_peak():
    # Three requests [0, 2), [1, 3), [3, 4) and one that failed before any response (no duration) in 4 s: 5 stream
    # seconds, so 1.25 open on average; at most 2 at once ([1, 2)); the third starts as the second ends.
    def request(index: int, start: float, total: float | None, audio: float = 1.0) -> RequestResult:
        ok = total is not None
        return RequestResult(index, "200" if ok else "error:ConnectError", ok, start, 0.1, total, audio if ok else 0.0)

    results = [request(0, 0.0, 2.0), request(1, 1.0, 2.0), request(2, 3.0, 1.0), request(3, 0.5, None)]
    s = summarize(results, elapsed_s=4.0)
    assert s["mean_in_flight"] == pytest.approx(1.25) and s["max_in_flight"] == 2
    # Listeners play from the first byte (0.1 s in) for the audio's length plus any gap: requests done early still
    # count while their audio plays. [0.1, 3.1), [1.1, 4.1) and, with a 0.5 s gap, [3.1, 6.6): two at once at most.
    results[0].audio_s, results[1].audio_s, results[2].audio_s, results[2].underrun_s = 3.0, 3.0, 3.0, 0.5
    assert summarize(results, elapsed_s=4.0)["max_listening"] == 2
    results[2].start_s = 2.9  # now it starts playing at 3.0, before the first ends at 3.1
    assert summarize(results, elapsed_s=4.0)["max_listening"] == 3
    assert summarize([], elapsed_s=1.0)["max_in_flight"] == summarize([], elapsed_s=1.0)["max_listening"] == 0


def test_split_level_shares_concurrency_and_interleaves_indices():
    assert split_evenly(10, 4) == [3, 3, 2, 2] and split_evenly(2, 3) == [1, 1, 0]
    shares = split_level(10, 4, concurrency=6)
    assert [s.concurrency for s in shares] == [2, 2, 1, 1]  # c/N, the remainder spread
    assert [list(s.indices()) for s in shares] == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    # Together exactly the requests one client sends, whatever the split.
    for total, n, c in ((512, 8, 256), (7, 3, 3), (16, 8, 1), (5, 8, 16)):
        shares = split_level(total, n, concurrency=c)
        assert len(shares) == min(n, c) and sum(s.concurrency for s in shares) == c
        assert sorted(i for s in shares for i in s.indices()) == list(range(total))
    open_shares = split_level(9, 2, rate=3.0)
    assert [s.rate for s in open_shares] == [1.5, 1.5] and [s.count for s in open_shares] == [5, 4]
    unbounded = split_level(None, 2, concurrency=4)[1]  # --duration: indices until time is up
    indices = unbounded.indices()
    assert [next(indices) for _ in range(3)] == [1, 3, 5]
    with pytest.raises(ValueError, match="cannot split"):
        split_evenly(3, 0)


def test_statistics_of_a_merged_run_are_over_all_requests():
    def ok(index: int, ttfa: float, audio: float, underrun: float = 0.0) -> RequestResult:
        return RequestResult(index, "200", True, 0.0, ttfa, 2.0, audio, 2.0 / audio, underrun)

    # Two clients: one saw fast first audio, the other slow; client 2 also had a failure.
    client1 = [ok(0, 0.1, 1.0), ok(2, 0.2, 1.0), ok(4, 0.3, 1.0)]
    client2 = [ok(1, 1.0, 2.0, 0.5), RequestResult(3, "error:RemoteProtocolError", False, 0.1, error="cut")]
    merged = merge_results([client2, client1])
    assert [r.index for r in merged] == [0, 1, 2, 3, 4]
    s = summarize(merged, elapsed_s=2.5)
    assert s == summarize(client1 + client2, elapsed_s=2.5)  # nothing but the per-request results counts
    assert (s["requests"], s["succeeded"], s["failed"]) == (5, 4, 1)
    assert s["failures"] == {"error:RemoteProtocolError": 1}
    assert s["audio_s_per_s"] == pytest.approx(5.0 / 2.5)  # all audio over the level's wall time
    assert s["requests_per_s"] == pytest.approx(4 / 2.5)
    # Percentiles over all four TTFAs [0.1, 0.2, 0.3, 1.0]: p50 0.25, not the mean of the clients' medians (0.6).
    assert s["ttfa_p50_s"] == pytest.approx(0.25)
    assert s["ttfa_p90_s"] == pytest.approx(0.79)
    assert s["underrun_total_s"] == pytest.approx(0.5) and s["requests_with_underrun"] == 1
    with pytest.raises(ValueError, match="more than one client"):
        merge_results([client1, [ok(2, 0.2, 1.0)]])
    assert Share(3, 4, 0).count == 0 and list(Share(3, 4, 0).indices()) == []


def test_texts_meta_lst_and_request_body():
    texts = default_texts()
    assert 30 <= len(texts) <= 60 and all(t.strip() == t and t for t in texts)
    assert max(map(len, texts)) > 4 * min(map(len, texts))  # varied lengths
    meta = "utt1|prompt one|wavs/a.wav|First text.\n\nutt2|prompt|wavs/b.wav| Second text, spaced. \n"
    assert parse_meta_lst(meta) == ["First text.", "Second text, spaced."]
    with pytest.raises(ValueError, match="line 1"):
        parse_meta_lst("only|three|fields\n")
    config = BenchConfig(url="http://x", texts=["a", "b"], voice="vivian", max_new_tokens=9, ignore_eos=True, seed=5)
    body = request_body(config, 3, config.texts)
    assert body == {
        "input": "b",
        "stream": True,
        "stream_format": "audio",
        "response_format": "pcm",
        "voice": "vivian",
        "max_new_tokens": 9,
        "ignore_eos": True,
        "seed": 8,
    }


def omni(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "omni.cli", *args], capture_output=True, text=True, **kwargs)


def test_bench_rejects_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "0,2"])
    assert exit_.value.code == 2 and "positive" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "2", "--rate", "1.5"])
    assert exit_.value.code == 2 and "not allowed with" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--url", "http://127.0.0.1:9", "--texts", str(empty)])
    assert exit_.value.code == 2 and "empty" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--url", "http://127.0.0.1:9", "--playout-buffer-ms", "-5"])
    assert exit_.value.code == 2 and "playout-buffer-ms" in capsys.readouterr().err


def test_bench_against_a_tiny_stack(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    serve, output = popen(
        "serve", "--tiny-variant", "custom_voice", "--port", "0", "--grpc-port", "0",
        "--work-dir", str(tmp_path / "serve"), "--max-streams", "4", env=env,
    )  # fmt: skip
    try:
        output.wait_for(SERVE_READY, READY_TIMEOUT_S)
        url = output.wait_for(r"HTTP API: (http://\S+)/v1").group(1)
        out, plot = tmp_path / "results.json", tmp_path / "results.png"
        started = time.time()
        result = omni(
            "bench", "--url", url, "--concurrency", "1,2", "--requests", "3", "--voice", "vivian",
            "--max-new-tokens", "6", "--seed", "1", "--out", str(out), "--plot", str(plot),
            env=env, timeout=300,
        )  # fmt: skip
        # Two client processes, one stream each, their connections opened before the clock: the parent merges their
        # per-request results.
        split_out = tmp_path / "split.json"
        split = omni(
            "bench", "--url", url, "--concurrency", "2", "--requests", "3", "--voice", "vivian",
            "--max-new-tokens", "4", "--ignore-eos", "--seed", "1", "--processes", "2", "--warm-connections",
            "--out", str(split_out), env=env, timeout=300,
        )  # fmt: skip
        # Seed 12 of this checkpoint draws EOS early (36 frames with omni synth); ignore_eos blocks it.
        fixed = {"input": "Hello there.", "voice": "vivian", "language": "English", "seed": 12}
        fixed |= {"response_format": "pcm", "max_new_tokens": 60}
        free = httpx.post(url + "/v1/audio/speech", json=fixed, timeout=300)
        forced = httpx.post(url + "/v1/audio/speech", json={**fixed, "ignore_eos": True}, timeout=300)
        grpc_address = output.wait_for(r"gRPC Speech service:\s+(\S+)").group(1)
        with SpeechClient(grpc_address) as client:
            stream = client.stream("Hello there.", voice="vivian", language="English", seed=12, max_new_tokens=60)
            grpc_audio = np.concatenate(list(stream))
            grpc_summary = stream.summary
            forced_stream = client.stream(
                "Hello there.", voice="vivian", language="English", seed=12, max_new_tokens=60, ignore_eos=True
            )
            forced_grpc_audio = np.concatenate(list(forced_stream))
            forced_grpc_summary = forced_stream.summary
    finally:
        interrupt_and_wait(serve)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "concurrency 2" in result.stderr  # the progress line
    report = json.loads(out.read_text())
    assert report["mode"] == "closed"
    assert [level["concurrency"] for level in report["levels"]] == [1, 2]
    for level in report["levels"]:
        assert (level["requests"], level["succeeded"], level["failures"]) == (3, 3, {})
        assert level["audio_s"] > 0 and level["audio_s_per_s"] > 0
        for r in level["results"]:
            assert r["ok"] and r["status"] == "200"
            assert 0 < r["ttfa_s"] <= r["total_s"]
            assert 0 < r["audio_s"] <= 6 * 1920 / 24000  # at most max_new_tokens frames of audio
            assert r["underrun_s"] >= r["underrun_buffered_s"] >= 0  # a buffer never adds a gap
            assert re.fullmatch(r"[0-9a-f]{32}", r["request_id"])  # the gateway's X-Request-Id
            assert started <= r["start_epoch_s"] <= time.time()
            assert 0 < r["write_start_s"] < r["ttfa_s"]  # the request was being written before any audio came back
        assert len({r["request_id"] for r in level["results"]}) == 3
        # One client keeps its connections alive: the level's first request opened one, not every request did.
        by_start = sorted(level["results"], key=lambda r: r["start_s"])
        assert by_start[0]["new_connection"] and sum(r["new_connection"] for r in by_start) < 3
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert split.returncode == 0, split.stdout + split.stderr
    assert "concurrency 2 (2 processes)" in split.stderr
    split_report = json.loads(split_out.read_text())
    assert split_report["settings"]["processes"] == 2
    (level,) = split_report["levels"]
    assert [r["index"] for r in level["results"]] == [0, 1, 2] and level["succeeded"] == 3
    assert not any(r["new_connection"] for r in level["results"])  # warm: every request found its connection open
    assert all(r["audio_s"] == pytest.approx(3 * 1920 / 24000) for r in level["results"])  # ignore_eos: 3 frames
    assert level["audio_s"] == pytest.approx(9 * 1920 / 24000)
    assert level["audio_s_per_s"] == pytest.approx(level["audio_s"] / level["elapsed_s"])
    assert free.status_code == forced.status_code == 200, free.text + forced.text
    assert 0 < len(free.content) < 59 * 1920 * 2  # stopped at EOS (int16 PCM)
    assert len(forced.content) == 59 * 1920 * 2  # exactly max_new_tokens - 1 frames
    # The gRPC Speech API and SDK carry the same field.
    assert grpc_audio.size == len(free.content) // 2 and grpc_summary.stop_reason == "eos"
    assert forced_grpc_audio.size == 59 * 1920 and forced_grpc_summary.num_frames == 59
    assert forced_grpc_summary.stop_reason == "max_new_tokens"
