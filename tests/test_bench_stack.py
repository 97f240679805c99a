"""tools/bench_stack.py (the one-command full-stack benchmark) and what it needs: released-size random checkpoints
(`--shape`) and per-service devices in `omni serve`. The GPU run itself is the lead's; here the script runs its CPU
smoke mode against a real tiny stack so it cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omni.services.common.logging import request_records

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.tiny import _fast_random, _released_speech_tokenizer_sizes, shape_config
from tests.reference import ref_python
from tests.tool_modules import load_tool

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "shape,hidden,ffn,params,size_name",
    [("0.6b", 1024, 3072, 905_788_672, "0b6"), ("1.7b", 2048, 6144, 1_916_676_352, "1b7")],
)
def test_released_shapes_config_and_parameter_count(shape, hidden, ffn, params, size_name):
    config = shape_config("custom_voice", shape)
    assert config["tts_model_size"] == size_name and config["tts_model_type"] == "custom_voice"
    cfg = Qwen3TTSConfig.parse(config)
    t = cfg.talker
    assert (t.hidden_size, t.intermediate_size, t.num_hidden_layers) == (hidden, ffn, 28)
    assert (t.num_attention_heads, t.num_key_value_heads, t.head_dim) == (16, 8, 128)
    p = t.code_predictor
    assert (p.hidden_size, p.intermediate_size, p.num_hidden_layers, p.head_dim) == (1024, 3072, 5, 128)
    assert set(t.spk_id) >= {"vivian"}  # the benchmark's built-in speaker
    with torch.device("meta"):
        talker = Qwen3TTSTalker(t)
    state = talker.state_dict()
    assert sum(v.numel() for v in state.values()) == params
    assert state["model.text_embedding.weight"].shape == (151936, 2048)
    assert ("code_predictor.small_to_mtp_projection.weight" in state) == (shape == "1.7b")
    base = shape_config("base", shape)["speaker_encoder_config"]
    assert base["enc_dim"] == hidden and base["enc_channels"] == [512, 512, 512, 512, 1536]
    with pytest.raises(ValueError, match="unknown shape"):
        shape_config("custom_voice", "7b")


def test_released_speech_tokenizer_sizes_undo_every_tiny_width():
    sizes = _released_speech_tokenizer_sizes()
    released = CodecDecoderConfig()
    decoder = {k[len("decoder_") :]: v for k, v in sizes.items() if k.startswith("decoder_")}
    assert decoder and all(getattr(released, k) == v for k, v in decoder.items())
    assert sizes["encoder_hidden_size"] == 512 and sizes["encoder_num_hidden_layers"] == 8
    with torch.device("meta"):
        params = sum(p.numel() for p in CodecDecoder(CodecDecoderConfig(**decoder)).parameters())
    assert params > 50_000_000  # the released vocoder, not the tiny one


def test_fast_random_scales():
    gen = torch.Generator().manual_seed(0)
    norm = _fast_random("model.layers.0.input_layernorm.weight", torch.Size([4096]), gen, torch.bfloat16, "cpu")
    bias = _fast_random("text_projection.linear_fc1.bias", torch.Size([64]), gen, torch.bfloat16, "cpu")
    embed = _fast_random("model.codec_embedding.weight", torch.Size([256, 256]), gen, torch.bfloat16, "cpu")
    q = _fast_random("model.layers.0.self_attn.q_proj.weight", torch.Size([256, 1024]), gen, torch.bfloat16, "cpu")
    o = _fast_random("model.layers.0.self_attn.o_proj.weight", torch.Size([256, 1024]), gen, torch.bfloat16, "cpu")
    assert norm.dtype == torch.bfloat16 and abs(norm.float().mean() - 1) < 0.01
    assert not bias.any()
    assert embed.float().std() == pytest.approx(0.02, rel=0.05)
    assert q.float().std() == pytest.approx(1024**-0.5, rel=0.05)
    assert o.float().std() == pytest.approx(1024**-0.5 / 56**0.5, rel=0.05)  # residual branches scaled down


def test_cpu_smoke_run_of_the_full_stack_benchmark(tmp_path):
    out = tmp_path / "stack"
    command = [sys.executable, str(ROOT / "tools" / "bench_stack.py"), "--device", "cpu", "--models", "tiny"]
    command += ["--concurrency", "1", "2", "--requests", "2", "--frames", "4", "--warmup", "1", "--out", str(out)]
    command += ["--client-processes", "2", "--codec-replicas", "2"]
    # The official qwen-tts on the same checkpoint, in the same invocation (its own venv, as on the GPU machine).
    command += ["--official", "--official-python", ref_python(), "--official-batches", "1", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["rows"]
    levels = json.loads((out / "bench-tiny-0gpu.json").read_text())["levels"]
    by_concurrency = {level["concurrency"]: level for level in levels}
    assert [(r["model"], r["concurrency"], r["requests"]) for r in rows] == [("tiny", 1, 2), ("tiny", 2, 2)]
    for row in rows:
        assert row["succeeded"] == 2 and row["failures"] == {} and row["wrong_length_requests"] == []
        assert row["audio_s"] == pytest.approx(2 * 4 / 12.5)  # ignore_eos: exactly 4 frames per request
        assert row["talker_step_ms"] > 0 and row["codec_tick_ms"] > 0 and row["talker_batch"] >= 1
        assert row["client_processes"] == 2
        # Diagnostics: the engine threads' share of each step, prefill time, and each service's busy cores.
        assert 0 < row["talker_compute_ms"] <= row["talker_step_ms"] * 1.01 and row["talker_prefill_ms"] > 0
        assert 0 < row["codec_compute_ms"] <= row["codec_tick_ms"] * 1.01 and row["talker_prefill_batch"] >= 1
        assert set(row["cpu_cores"]) == {"talker", "codec", "codec1", "refenc", "gateway", "client"}
        assert row["cpu_cores"]["talker"] > 0 and all(v >= 0 for v in row["cpu_cores"].values())
        # A backend's event loop is one thread of its process: some of its CPU, never more.
        assert set(row["loop_cores"]) == {"talker", "codec", "codec1", "refenc"}
        slack = 0.03 / row["elapsed_s"]  # a process's CPU is in whole clock ticks (10 ms): one per reading either way
        assert all(0 <= v <= row["cpu_cores"][k] + slack for k, v in row["loop_cores"].items()), row["loop_cores"]
        assert row["loop_cores"]["talker"] > 0 and row["loop_cores"]["codec"] + row["loop_cores"]["codec1"] > 0
        assert row["log_problems"] == {"count": 0, "first": []}, row["log_problems"]
        # No GPU: nvidia-smi is not asked, so no level has GPU samples.
        assert not [k for k in row if k.startswith("gpu") and k != "gpus"]
        assert 0 < row["talker_prefill_share"] < 1
        # The talker sized every first chunk, with 2 frames (a tiny load is never busy_streams).
        assert row["talker_first_chunk_frames"] == 2.0
        assert row["talker_early_chunks_per_request"] == 0  # chunks of 2 and 2: planned sizes come before the floor
        # Every request's client TTFA split at the gateway's handler (same machine, one wall clock): the client
        # starts writing its request, the handler starts after that, and the handler's first audio
        # reaches the client after it left.
        assert row["client_requests_joined"] == row["requests"]
        for part in ("in_client", "to_handler", "to_client"):
            assert 0 <= row[f"{part}_p50_ms"] <= row[f"{part}_p99_ms"] < row["ttfa_p99_s"] * 1000, part
        assert row["in_client_p50_ms"] > 0  # every result has its send time
        # The opening wave's (the level's `concurrency` first requests) way to the handler, whole and in its parts.
        whole, in_client = row["first_wave_before_handler_p99_ms"], row["first_wave_in_client_p99_ms"]
        assert 0 < in_client <= whole and 0 <= row["first_wave_to_handler_p99_ms"] <= whole
        # Under 100 requests the slowest 1% is the slowest request: its parts add up to at least the p99.
        slowest = sum(row[f"slowest_{part}_ms"] for part in ("in_client", "to_handler", "in_gateway", "to_client"))
        assert row["requests"] < 100 and slowest >= row["ttfa_p99_s"] * 1000 - 0.01
        # Engine load: one talker is busy at most all the time, two codec replicas at most twice; a 4-frame request
        # sends chunks of 2 and 2 frames, so it takes 1 or 2 codec rows (its chunks merged in one tick, or not).
        assert 0 < row["talker_busy"] <= 1.01 and 0 < row["codec_busy"] <= 2.02 and row["codec_ticks_per_s"] > 0
        assert 1 <= row["codec_rows_per_request"] <= 2
        # No row cap in this stack: no row deferred; late rows counted (a tiny CPU stack may or may not run dry).
        assert row["codec_deferred_rows_per_request"] == 0 and row["codec_late_rows_per_request"] >= 0
        # Garbage collections: each process's share of the level (summed over generations), never all of it.
        assert 0 <= row["talker_gc_share"] < 1 and 0 <= row["codec_gc_share"] < 2
        # The gateway's, from its own /metrics (its workers summed): read, and a count of long pauses.
        assert 0 <= row["gateway_gc_share"] < 1 and row["gateway_gc_over_20ms"] >= 0
        # Its workers' loop lag (a 50 ms timer) and its writes to the talker and codec, observed over the level.
        assert row["gateway_loop_lag_ms"] >= 0 and row["gateway_loop_lag_over_20ms"] >= 0
        assert row["gateway_write_ms"] > 0 and row["gateway_write_over_20ms"] >= 0
        # The talker's and codec's event loops, from their own /metrics (their timers run once they are warm).
        for name in ("talker", "codec"):
            assert row[f"{name}_loop_lag_ms"] >= 0 and row[f"{name}_loop_lag_over_20ms"] >= 0, name
        # The clients' own CPU over the level, and the gateway's view of time to first audio, which cannot be later
        # than the client's (it starts when the handler runs and ends when the first byte is sent).
        assert row["cpu_cores"]["client"] > 0
        assert 1 <= row["gateway_requests_logged"] <= 2
        client_ttfa = [r["ttfa_s"] * 1000 for r in by_concurrency[row["concurrency"]]["results"]]
        assert 0 < row["gateway_ttfa_p50_ms"] <= row["gateway_ttfa_p99_ms"] <= max(client_ttfa)
        # ... split by request id at the talker: each part is a span of the gateway's figure.
        assert 0 <= row["hop_p50_ms"] and 0 < row["talker_first_chunk_p50_ms"] and 0 <= row["after_talker_p50_ms"]
        # The gateway's own part of the hop (handler start to the talker request taken for a write), within it: the
        # talker cannot have a request sooner (both read off one machine's clocks; a line's times are rounded to µs).
        send, hop = row["gateway_send_p50_ms"], row["hop_p50_ms"]
        assert 0 < send <= hop + 0.01, (send, hop)
        # Its earlier parts, in order (medians of marks that are in order for every request).
        assert 0 <= row["gateway_voices_p50_ms"] <= row["gateway_prepared_p50_ms"] <= send, row
        assert row["talker_first_chunk_p99_ms"] < row["gateway_ttfa_p99_ms"]
    table = (out / "table.md").read_text()
    assert table.startswith("| model | GPUs | conc |") and table.count("\n| tiny | 0 |") == 2
    assert (out / "bench-tiny-0gpu.png").read_bytes()[:4] == b"\x89PNG"
    # The logs come back flat: plain files one folder below --out (the device tool copies only a few levels).
    logs = {path.name for path in (out / "logs").iterdir() if path.is_file()}
    names = ("serve", "gateway", "talker", "codec", "codec-1", "refenc")
    assert logs == {f"tiny-0gpu-{name}.log" for name in names} | {"tiny-0gpu-command.txt", "official-tiny.log"}
    # The gateway's and the talker's request lines carry their start on the wall clock: no later than the line's time
    # less its total (both to the µs), and a talker request starts after its gateway handler did.
    gateway_log, talker_log = ((out / "logs" / f"tiny-0gpu-{name}.log").read_text() for name in ("gateway", "talker"))
    speech = {r["request_id"]: r for r in request_records(gateway_log, "speech")}
    generate = request_records(talker_log, "generate")
    assert generate and {r["request_id"] for r in generate} <= set(speech)
    assert all(r["start_ts"] <= r["ts"] - r["total_ms"] / 1000.0 + 2e-6 for r in [*speech.values(), *generate])
    assert all(speech[r["request_id"]]["start_ts"] < r["start_ts"] for r in generate)
    (official,) = json.loads((out / "results.json").read_text())["official"]
    detail = json.loads((out / "official-tiny.json").read_text())
    assert detail["max_new_tokens"] == 5 and [r["batch"] for r in detail["rows"]] == [1, 2]  # the same 4 frames
    assert official["official_best"]["audio_s_per_s"] == max(r["audio_s_per_s"] for r in detail["rows"])
    ours = max(r["audio_s_per_s"] for r in rows)
    assert official["ours_best"]["0"]["audio_s_per_s"] == ours
    assert official["ratio"]["0"] == pytest.approx(ours / official["official_best"]["audio_s_per_s"])
    assert "official qwen-tts (tiny, same checkpoint and length, this run)" in table
    serve_log = (out / "logs" / "tiny-0gpu-serve.log").read_text()
    for name in ("talker", "codec", "refenc"):  # omni serve's per-service device flags reached each service
        assert f"{name} service:" in serve_log
    assert serve_log.count(") on cpu") == 4  # refenc, two codec replicas, talker
    assert '"msg": "generate"' in (out / "logs" / "tiny-0gpu-talker.log").read_text()


def load_bench_stack():
    return load_tool("bench_stack")


def test_the_level_line_gives_the_gapped_requests_silence_in_ms():
    """omni bench's gap_silence_*_s (NaN when no request had a gap, absent in older results) on the level line."""
    line = load_bench_stack().format_diagnostics(
        {"gap_silence_p50_s": 0.028, "gap_silence_p90_s": 0.0434, "gap_silence_max_s": float("nan")}
    )
    assert "gap_silence_p50_ms 28" in line and "gap_silence_p90_ms 43" in line and "gap_silence_max" not in line
    assert "gap_silence" not in load_bench_stack().format_diagnostics({})


def test_metrics_pages_are_read_as_sums_and_counts():
    """Histograms summed over labels; the gateway's GC pauses, loop lags and backend writes in ms and the talker's
    loop lags with the long ones counted apart (a bucket edge at LONG_MS: 3 of 5 pauses, 9 of 10 gateway lags, 9 of
    10 writes, 18 of 20 talker lags were within it); the talker's first chunks as frames x requests."""
    page = """# HELP omni_talker_step_ms step
# TYPE omni_talker_step_ms histogram
omni_talker_step_ms_bucket{le="+Inf"} 4.0
omni_talker_step_ms_sum 60.0
omni_talker_step_ms_count 4.0
# HELP omni_gateway_gc_pause_seconds pauses
# TYPE omni_gateway_gc_pause_seconds histogram
omni_gateway_gc_pause_seconds_bucket{generation="0",le="0.01"} 2.0
omni_gateway_gc_pause_seconds_bucket{generation="0",le="0.02"} 2.0
omni_gateway_gc_pause_seconds_bucket{generation="0",le="+Inf"} 2.0
omni_gateway_gc_pause_seconds_sum{generation="0"} 0.004
omni_gateway_gc_pause_seconds_count{generation="0"} 2.0
omni_gateway_gc_pause_seconds_bucket{generation="2",le="0.01"} 0.0
omni_gateway_gc_pause_seconds_bucket{generation="2",le="0.02"} 1.0
omni_gateway_gc_pause_seconds_bucket{generation="2",le="+Inf"} 3.0
omni_gateway_gc_pause_seconds_sum{generation="2"} 0.136
omni_gateway_gc_pause_seconds_count{generation="2"} 3.0
# HELP omni_talker_first_chunk_frames_total first chunks
# TYPE omni_talker_first_chunk_frames_total counter
omni_talker_first_chunk_frames_total{frames="2"} 6.0
omni_talker_first_chunk_frames_total{frames="3"} 2.0
# HELP omni_talker_early_chunk_frames early chunks
# TYPE omni_talker_early_chunk_frames histogram
omni_talker_early_chunk_frames_bucket{le="+Inf"} 3.0
omni_talker_early_chunk_frames_sum 12.0
omni_talker_early_chunk_frames_count 3.0
# HELP omni_gateway_loop_lag_seconds lag
# TYPE omni_gateway_loop_lag_seconds histogram
omni_gateway_loop_lag_seconds_bucket{le="0.02"} 9.0
omni_gateway_loop_lag_seconds_bucket{le="+Inf"} 10.0
omni_gateway_loop_lag_seconds_sum 0.07
omni_gateway_loop_lag_seconds_count 10.0
# HELP omni_gateway_backend_write_seconds writes
# TYPE omni_gateway_backend_write_seconds histogram
omni_gateway_backend_write_seconds_bucket{service="talker",le="0.02"} 4.0
omni_gateway_backend_write_seconds_bucket{service="talker",le="+Inf"} 4.0
omni_gateway_backend_write_seconds_sum{service="talker"} 0.002
omni_gateway_backend_write_seconds_count{service="talker"} 4.0
omni_gateway_backend_write_seconds_bucket{service="codec",le="0.02"} 5.0
omni_gateway_backend_write_seconds_bucket{service="codec",le="+Inf"} 6.0
omni_gateway_backend_write_seconds_sum{service="codec"} 0.058
omni_gateway_backend_write_seconds_count{service="codec"} 6.0
# HELP omni_talker_loop_lag_ms lag
# TYPE omni_talker_loop_lag_ms histogram
omni_talker_loop_lag_ms_bucket{le="20.0"} 18.0
omni_talker_loop_lag_ms_bucket{le="+Inf"} 20.0
omni_talker_loop_lag_ms_sum 100.0
omni_talker_loop_lag_ms_count 20.0
# HELP omni_codec_late_ms late rows
# TYPE omni_codec_late_ms histogram
omni_codec_late_ms_bucket{le="+Inf"} 3.0
omni_codec_late_ms_sum 90.0
omni_codec_late_ms_count 3.0
# HELP omni_codec_deferred_rows_total deferred rows
# TYPE omni_codec_deferred_rows_total counter
omni_codec_deferred_rows_total 7.0
# HELP omni_codec_frames_decoded_total frames
# TYPE omni_codec_frames_decoded_total counter
omni_codec_frames_decoded_total 3000.0
# HELP omni_codec_replayed_frames_total replayed
# TYPE omni_codec_replayed_frames_total counter
omni_codec_replayed_frames_total 3900.0
# HELP omni_codec_planned_ms planned replays
# TYPE omni_codec_planned_ms histogram
omni_codec_planned_ms_bucket{le="+Inf"} 40.0
omni_codec_planned_ms_sum 1200.0
omni_codec_planned_ms_count 40.0
# HELP omni_talker_prefill_ms prefills
# TYPE omni_talker_prefill_ms histogram
omni_talker_prefill_ms_bucket{le="+Inf"} 10.0
omni_talker_prefill_ms_sum 150.0
omni_talker_prefill_ms_count 10.0
"""
    bench_stack = load_bench_stack()
    read = bench_stack.read_metrics(page)
    assert read["omni_talker_step_ms"] == (60.0, 4.0)
    assert read["omni_gateway_gc_pause_seconds"] == (pytest.approx(140.0), 5.0)
    assert read["omni_gateway_gc_pause_seconds:long"] == (0.0, 2.0)
    assert read["omni_talker_first_chunk_frames"] == (18.0, 8.0)
    load = bench_stack.engine_load({}, read, wall_s=2.0, requests=2)
    assert load["gateway_gc_share"] == pytest.approx(0.07) and load["gateway_gc_over_20ms"] == 2.0
    assert load["talker_early_chunks_per_request"] == 1.5
    assert load["gateway_loop_lag_over_20ms"] == 1.0 and load["gateway_write_over_20ms"] == 1.0
    assert load["talker_loop_lag_over_20ms"] == 2.0 and load["codec_loop_lag_over_20ms"] is None  # not on the page
    assert (load["codec_late_rows_per_request"], load["codec_deferred_rows_per_request"]) == (1.5, 3.5)
    # The codec's planned replays (1.2 s) and the talker's prefills (0.15 s) over the 2 s level, as shares of it.
    assert load["codec_planned_share"] == pytest.approx(0.6) and load["talker_prefill_share"] == pytest.approx(0.075)
    assert load["codec_replayed_per_frame"] == pytest.approx(1.3)  # 3,900 frames replayed for 3,000 decoded
    means = bench_stack.metric_means({}, read)
    assert means["talker_first_chunk_frames"] == 2.25 and means["talker_early_chunk_frames"] == 4.0
    assert means["gateway_loop_lag_ms"] == pytest.approx(7.0) and means["gateway_write_ms"] == pytest.approx(6.0)
    assert means["talker_loop_lag_ms"] == 5.0  # already in ms
    assert means["codec_late_ms"] == 30.0  # how late a late row was, on average


def test_problem_lines_pick_errors_and_failed_requests_from_service_logs():
    problem_lines = load_bench_stack().problem_lines
    lines = [
        '{"level": "info", "msg": "talker serving"}',
        '{"level": "info", "msg": "speech", "outcome": "ok", "request_id": "a"}',
        '{"level": "info", "msg": "generate", "outcome": "max_new_tokens"}',
        '{"level": "info", "msg": "decode", "outcome": "cancelled"}',
        '{"level": "info", "msg": "speech", "outcome": "error", "reason": "raw stream truncated: codec failed"}',
        '{"level": "info", "msg": "decode", "outcome": "invalid_argument"}',
        '{"level": "error", "msg": "Exception in ASGI application", "exc": "Traceback ..."}',
        '{"level": "warning", "msg": "codec replica 127.0.0.1:1 marked down: UNAVAILABLE"}',
        "Traceback (most recent call last):",
        "RuntimeError: CUDA error: out of memory",
        "plain progress line",
    ]
    assert problem_lines("\n".join(lines)) == [lines[i] for i in (4, 5, 6, 8, 9)]


def test_bench_stack_rejects_bad_arguments():
    command = [sys.executable, str(ROOT / "tools" / "bench_stack.py"), "--out", "/tmp/x", "--frames", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--frames" in result.stderr


def test_open_loop_levels_replace_the_concurrency_sweep():
    bench_stack = load_bench_stack()
    closed = bench_stack.parse_args(["--concurrency", "4", "8", "--rounds", "3", "--out", "/tmp/unused"])
    assert bench_stack.sweep(closed) == [(4, 0.0, 16), (8, 0.0, 24)]  # at least 16 requests a level
    args = ["--concurrency", "800", "--rates", "62.5", "100", "--arrival-seconds", "20", "--out", "/tmp/unused"]
    opened = bench_stack.parse_args(args)
    assert bench_stack.sweep(opened) == [(0, 62.5, 1250), (0, 100.0, 2000)]
    row = {"model": "1.7b", "gpus": 1, "concurrency": 0, "rate": 62.5, "mean_in_flight": 512.4, "requests": 1250}
    row |= {"max_listening": 660}
    row |= {"audio_s_per_s": 625.0, "requests_per_s": 62.5, "rtf_p50": 0.8, "rtf_p90": 0.9, "failures": {}}
    row |= {f"ttfa_p{q}_s": 0.2 for q in (50, 90, 99)} | {"wrong_length_requests": [], "underrun_pct": 1.0}
    formatted = bench_stack.format_row(row | {"underrun_buffered_pct": 0.0})
    assert formatted.startswith("| 1.7b | 1 | 62.5/s: 512 in flight, 660 listening | 1250 |")
    assert "| 0.900 | 1.00 | 0 | 0 |" in formatted  # RTF p90, gapped %, with the buffer %, failures
    # A few gapped requests of thousands (10 of 3,072) print as their share, not rounded to 0.
    few = bench_stack.format_row(row | {"underrun_pct": 100 * 10 / 3072, "underrun_buffered_pct": 0.0})
    assert "| 0.33 | 0 | 0 |" in few
    for bad in (["--rates", "0"], ["--rates", "5", "--arrival-seconds", "-1"]):
        with pytest.raises(SystemExit):
            bench_stack.parse_args([*bad, "--out", "/tmp/unused"])


def test_serve_pins_each_gpu_backend_to_its_own_device():
    from omni.commands.serve import pin_gpu

    assert pin_gpu("cpu", {}) == ("cpu", None)
    assert pin_gpu("cuda", {}) == ("cuda", None)  # the current device, as given
    assert pin_gpu("cuda:1", {"PATH": "/bin"}) == ("cuda", {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1"})
    assert pin_gpu("cuda:1", {"CUDA_VISIBLE_DEVICES": "4, 6"}) == ("cuda", {"CUDA_VISIBLE_DEVICES": "6"})
    with pytest.raises(ValueError, match="only 1 GPU"):
        pin_gpu("cuda:1", {"CUDA_VISIBLE_DEVICES": "3"})


def test_a_talker_has_its_gpu_alone_unless_a_codec_process_is_on_it():
    from omni.commands.serve import talker_gpu_alone

    assert talker_gpu_alone("cuda:0", ["cuda:1"])
    assert talker_gpu_alone("cuda:1", ["cuda"])  # "cuda" is GPU 0
    assert not talker_gpu_alone("cuda", ["cuda:0"])  # one GPU shared
    assert not talker_gpu_alone("cuda:1", ["cuda:1"])
    assert not talker_gpu_alone("cuda:0", ["cuda:1", "cuda:0"])  # a codec replica on the talker's GPU
    assert not talker_gpu_alone("cpu", ["cuda"])


def test_mps_is_refused_without_a_gpu(capsys):
    # MPS shares one GPU between processes; on CPU the option is an error before anything starts.
    with pytest.raises(SystemExit):
        load_bench_stack().parse_args(["--mps", "--device", "cpu", "--out", "/tmp/unused"])
    assert "--mps shares a GPU" in capsys.readouterr().err


def test_the_clients_ttfa_is_split_by_the_gateways_line_of_the_same_request():
    """A client request started at wall time 99.990 s, which the client started writing 4 ms later, whose gateway
    handler began at 100.000 (its line at 101.0 after 1,000 ms) and handed out first audio 95 ms later, which the
    client got 120 ms after its start: 4 ms in the client, 6 more to the handler, 95 in the gateway, 15 back. A result
    without a send time counts it all as the way to the handler; one without a line and one with no audio are left
    out. A line with the handler's `start_ts` is placed by it, not by its time less its total (late here by 2 ms)."""
    gateway = "\n".join(
        [
            json.dumps({"ts": 101.0, "msg": "speech", "request_id": "a", "ttfa_ms": 95.0, "total_ms": 1000.0}),
            json.dumps({"ts": 101.0, "msg": "speech", "request_id": "c", "ttfa_ms": None, "total_ms": 10.0}),
            json.dumps(
                {"ts": 101.0, "msg": "speech", "request_id": "d", "start_ts": 100.0, "ttfa_ms": 95.0, "total_ms": 998.0}
            ),
        ]
    )
    results = [
        {"request_id": "d", "start_epoch_s": 99.990, "write_start_s": 0.004, "ttfa_s": 0.120},
        {"request_id": "a", "start_epoch_s": 99.990, "write_start_s": 0.004, "ttfa_s": 0.120},
        {"request_id": "a", "start_epoch_s": 99.990, "ttfa_s": 0.120},  # an older result: no send time
        {"request_id": "b", "start_epoch_s": 99.990, "ttfa_s": 0.050},  # no gateway line
        {"request_id": "c", "start_epoch_s": 100.0, "ttfa_s": None},  # failed
    ]
    found = [tuple(round(v, 6) for v in parts) for parts in load_bench_stack().client_ttfa_parts_ms(results, gateway)]
    assert found == [(4.0, 6.0, 95.0, 15.0), (4.0, 6.0, 95.0, 15.0), (0.0, 10.0, 95.0, 15.0)]


def test_the_first_waves_way_to_the_handler_is_reported_on_its_own():
    """The opening wave is the `concurrency` earliest-started requests, whatever their index (each client process
    numbers its own); its way to the handler is reported whole (as runs 68-72 measured it) and in its parts."""
    bench_stack = load_bench_stack()
    results = [{"index": i, "start_s": s} for i, s in enumerate([0.002, 0.5, 0.0, 0.001])]
    assert [r["index"] for r in bench_stack.first_wave(results, 3)] == [2, 3, 0]
    assert bench_stack.first_wave(results, 0) == []  # an open loop has no opening wave
    # One request waited 60 ms in its client and 40 more to the handler; the other 2 + 5: p99 near the slow one's.
    found = bench_stack.first_wave_split([(60.0, 40.0, 95.0, 5.0), (2.0, 5.0, 95.0, 5.0)])
    assert list(found) == [f"first_wave_{p}_p99_ms" for p in ("before_handler", "in_client", "to_handler")]
    assert [round(v, 2) for v in found.values()] == [99.07, 59.42, 39.65]
    assert bench_stack.first_wave_split([]) == {}


def test_the_slowest_requests_show_which_part_their_time_to_first_audio_is_made_of():
    bench_stack = load_bench_stack()
    # 198 requests of 1 + 5 + 100 + 5 ms, and two of 1 + 5 + 100 + 200: the tail is on the way back.
    split = [(1.0, 5.0, 100.0, 5.0)] * 198 + [(1.0, 5.0, 100.0, 200.0), (3.0, 6.0, 110.0, 190.0)]
    found = bench_stack.client_ttfa_split(split)
    assert found["in_client_p50_ms"] == 1.0 and found["to_handler_p50_ms"] == 5.0 and found["to_client_p50_ms"] == 5.0
    assert found["to_client_p99_ms"] > 5.0  # the two slow ones are above the 99th percentile's rank
    assert (found["slowest_in_client_ms"], found["slowest_to_handler_ms"]) == (2.0, 5.5)
    assert found["slowest_in_gateway_ms"] == 105.0
    assert found["slowest_to_client_ms"] == 195.0
    assert bench_stack.client_ttfa_split([]) == {}


def test_gateway_ttfa_is_read_from_the_gateways_request_lines():
    text = "\n".join(
        [
            json.dumps({"level": "info", "msg": "speech", "outcome": "ok", "ttfa_ms": 12.5}),
            json.dumps({"level": "info", "msg": "speech", "outcome": "cancelled", "ttfa_ms": None}),
            json.dumps({"level": "info", "msg": "gateway worker 0 serving"}),
            "Traceback (most recent call last):",
            json.dumps({"level": "info", "msg": "speech", "outcome": "ok", "ttfa_ms": 40}),
        ]
    )
    assert load_bench_stack().gateway_ttfa_ms(text) == [12.5, 40.0]


def test_ttfa_is_split_at_the_talker_by_request_id():
    """A request whose gateway handler began at t=100.000 s, reached the talker at 100.010 and got its first chunk
    60 ms later, with its first audio out of the gateway 95 ms after the handler began: hop 10 (4 of them before the
    gateway had written the talker request), talker 60, after 25.
    Lines of other requests, and a cancelled one with no audio, are left out."""

    def line(msg: str, ts: float, **fields) -> str:
        return json.dumps({"ts": ts, "level": "info", "msg": msg, **fields})

    marks = {"voices_ms": 1.0, "prepared_ms": 2.5, "talker_sent_ms": 4.0}  # the gateway's part of the hop, in steps
    gateway = "\n".join(
        [
            line("speech", 101.0, request_id="a", outcome="ok", ttfa_ms=95.0, **marks, total_ms=1000.0),
            line("speech", 101.5, request_id="b", outcome="cancelled", ttfa_ms=None, total_ms=500.0),
            line("speech", 102.0, request_id="gone", outcome="ok", ttfa_ms=50.0, total_ms=900.0),
        ]
    )
    talker = "\n".join(
        [
            line("generate", 100.99, request_id="a", outcome="max_new_tokens", first_chunk_ms=60.0, total_ms=980.0),
            line("generate", 101.4, request_id="b", outcome="cancelled", first_chunk_ms=0.0, total_ms=400.0),
            line("talker.step", 101.0, prompts=1),
        ]
    )
    parts = load_bench_stack().ttfa_parts_ms(gateway, talker)
    gateway_parts = ["gateway_voices", "gateway_prepared", "gateway_send"]
    assert list(parts) == ["hop", *gateway_parts, "talker_first_chunk", "after_talker"]
    # 4 of the hop's 10 in the gateway: the voice list read after 1, the prompt built after 2.5
    assert [round(v[0], 6) for v in parts.values()] == [10.0, 1.0, 2.5, 4.0, 60.0, 25.0]
    assert all(len(v) == 1 for v in parts.values())
