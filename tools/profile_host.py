"""Host (CPU) overhead of the codec service per chunk and per step, on a tiny codec where the model call is cheap.

    python tools/profile_host.py --streams 64 256 --null-model [--s16] [--repeat 3] [--cprofile 25]
    python tools/profile_host.py --stack --streams 16 64 [--max-new-tokens 126]

For each concurrency level it starts `omni codec` on CPU in a subprocess (a tiny random-weight codec, so the
device-independent host work dominates), drives N streams over loopback gRPC with the benchmark's client
(`tools/bench_codec_service.py: run_level`: a 1-frame chunk, then 15-frame chunks, F32LE PCM back, or S16LE with
--s16), once to warm up, then `--repeat` timed passes (the one with the least server CPU per chunk is kept: the
machine is shared), and prints one table: CPU time per chunk split by where it is spent.

Server spans (wrapped around the engine's own methods, nothing in the service changes):
- `step`: the engine's worker-thread step (reset/prime, the batched decode, the PCM packing), CPU time of that
  thread; `model` is the decode call inside it, so `step - model` is the per-step host work around the model.
- `deliver`: the event-loop side of a step (handing each stream its audio).
- `loop other`: the rest of the event-loop thread's CPU (gRPC reads/writes, protobuf messages, the servicer).
- `grpc threads`: the process's CPU outside those two threads (grpc's C-core poller).
The client's CPU is reported alone (it is the same Python client code the gateway runs per chunk).
With --cprofile N the server's event-loop thread runs under cProfile during the timed pass and the top N functions
by own time are printed; cProfile inflates Python costs, so take the table from a run without it.
--null-model replaces the decode call by zeros of its output shape, so steps/s and audio-s/s are host-bound.

--stack runs the whole stack instead: `omni serve` on a tiny random custom_voice checkpoint (CPU), `omni bench`
(streaming raw PCM over HTTP) at each concurrency with N requests, and prints each service process's CPU
milliseconds per second of audio served (from /proc). The talker's and codec's include their (CPU) model compute;
the gateway has none, so its figure is pure host overhead: 1000 / it = audio-s/s one gateway core can carry. The
talker's and codec's `loop` columns are their main thread alone (the asyncio event loop that handles their gRPC
messages; the engines run in worker threads).
"""

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_codec_service as bench  # noqa: E402 (a sibling script: its model writer and client)
from bench_stack import main_thread_cpu_s, stat_cpu_s, stat_fields  # noqa: E402 (a sibling script)

# ---- server side (a subprocess) ----------------------------------------------------------------------------------


class Spans:
    """Accumulated CPU seconds per named span; `reset()` starts a measurement window."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.cpu: dict[str, float] = {"step": 0.0, "model": 0.0, "deliver": 0.0}
        self.steps = 0  # engine ticks: a step may hold only fresh streams or end markers, or read the one in flight
        self.decodes = 0  # model calls: at most one per chunk (a row holds one or more chunks)
        self.chunks = 0
        self.frames = 0
        self.process_cpu0 = time.process_time()
        self.loop_cpu0 = time.thread_time()  # reset() runs on the event-loop thread (a signal handler)
        self.wall0 = time.perf_counter()

    def report(self) -> dict:
        return {
            **{k: round(v, 6) for k, v in self.cpu.items()},
            "steps": self.steps,
            "decodes": self.decodes,
            "chunks": self.chunks,
            "frames": self.frames,
            "process_cpu": time.process_time() - self.process_cpu0,
            "loop_cpu": time.thread_time() - self.loop_cpu0,
            "wall": time.perf_counter() - self.wall0,
        }


def instrument(engine, spans: Spans) -> None:
    """Wrap the engine's step, model call and delivery with CPU-time spans (thread CPU of the calling thread)."""
    step, decode, deliver = engine._advance, engine._decode, engine._deliver

    def timed_step(planned, in_flight):
        t0 = time.thread_time()
        try:
            return step(planned, in_flight)
        finally:
            spans.cpu["step"] += time.thread_time() - t0
            spans.steps += 1

    def timed_decode(slots, chunks):
        t0 = time.thread_time()
        try:
            return decode(slots, chunks)
        finally:
            spans.cpu["model"] += time.thread_time() - t0
            spans.decodes += 1

    def timed_deliver(stream, chunks, *args):
        t0 = time.thread_time()
        try:
            return deliver(stream, chunks, *args)
        finally:
            spans.cpu["deliver"] += time.thread_time() - t0
            spans.chunks += sum(p.codes is not None for p in chunks)
            spans.frames += sum(p.codes.shape[0] for p in chunks if p.codes is not None)

    engine._advance, engine._decode, engine._deliver = timed_step, timed_decode, timed_deliver


def null_decode(engine):
    """A stand-in for the model call: zeros of the real output shape (isolates host cost; --null-model only)."""
    import torch

    from omni.models.qwen3_tts.codec_graphs import StepWaves

    def decode(slots, chunks):
        # One block for the step, as one graph replay returns it: rows padded to the longest chunk.
        spf = engine.samples_per_frame
        where = [(0, i, c.shape[0] * spf) for i, c in enumerate(chunks)]
        return StepWaves([torch.zeros(len(chunks), max(c.shape[0] for c in chunks) * spf)], where)

    return decode


def serve_codec(args: argparse.Namespace) -> None:
    """The codec service with spans: SIGUSR1 starts a window, SIGUSR2 writes its report to --report."""
    import torch
    from omni.services.codec.config import CodecConfig
    from omni.services.codec.service import build_codec_service, warm_up

    torch.set_num_threads(1)  # the model call is not what we measure; keep it off the other core
    config = CodecConfig(model=args.model, host="127.0.0.1", port=args.port, device="cpu", dtype="float32")
    config.max_streams = args.max_streams
    config.metrics_port = -1

    async def main() -> None:
        service, engine = build_codec_service(config)
        spans = Spans()
        if args.null_model:
            engine._decode = null_decode(engine)
        instrument(engine, spans)
        profiler = cProfile.Profile() if args.cprofile else None
        loop = asyncio.get_running_loop()

        def start_window() -> None:
            spans.reset()
            if profiler is not None:
                profiler.enable()

        def write_report() -> None:
            if profiler is not None:
                profiler.disable()
            report = spans.report()
            if profiler is not None:
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.cprofile)
                report["cprofile"] = text.getvalue()
            Path(args.report).write_text(json.dumps(report))

        loop.add_signal_handler(signal.SIGUSR1, start_window)
        loop.add_signal_handler(signal.SIGUSR2, write_report)
        engine.start()
        try:
            await service.run(lambda: warm_up(engine))
        finally:
            await engine.stop()

    asyncio.run(main())


# ---- client side -------------------------------------------------------------------------------------------------


class _S16Formats:
    """bench_codec_service's client asks for F32LE; under --s16 its `common_pb2` is this, which answers S16LE."""

    def __getattr__(self, name: str):
        from omni.proto import common_pb2

        if name == "SAMPLE_FORMAT_PCM_F32LE":
            return common_pb2.SAMPLE_FORMAT_PCM_S16LE
        return getattr(common_pb2, name)


def measure_level(
    model: Path, streams: int, frames: int, cprofile: int, null_model: bool, repeat: int, shared_calls: int = 0
) -> dict:
    """One server, a warm-up pass, then `repeat` timed passes of `streams` streams; returns the pass with the least
    server host CPU per chunk (the machine is shared: the least disturbed pass is the best estimate)."""
    port = bench.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        cmd = [sys.executable, __file__, "--serve-codec", "--model", str(model), "--port", str(port)]
        cmd += ["--max-streams", str(streams), "--report", str(report_path), "--cprofile", str(cprofile)]
        cmd += ["--null-model"] if null_model else []
        server = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy())
        passes = []
        try:
            bench.wait_serving(port, server)
            asyncio.run(bench.run_level(port, streams, 16, 1, 15, 99, shared_calls))  # warm-up: both chunk shapes
            for i in range(repeat):
                report_path.unlink(missing_ok=True)
                server.send_signal(signal.SIGUSR1)
                time.sleep(0.2)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                row, _ = asyncio.run(bench.run_level(port, streams, frames, 1, 15, i, shared_calls))
                client_cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                server.send_signal(signal.SIGUSR2)
                for _ in range(100):
                    if report_path.exists():
                        break
                    time.sleep(0.1)
                else:
                    raise SystemExit("the codec server wrote no report")
                time.sleep(0.1)
                report = json.loads(report_path.read_text())
                report.update(client_cpu=client_cpu, client_wall=wall, audio_s_per_s=row["audio_s_per_s"])
                passes.append(report)
        finally:
            server.terminate()
            server.wait(timeout=60)
    best = min(passes, key=lambda r: (r["process_cpu"] - r["model"]) / r["chunks"])
    return {**best, "streams": streams, "passes": len(passes)}


# ---- the whole stack: omni serve (tiny checkpoint) driven by omni bench ------------------------------------------


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc), all its threads."""
    return stat_cpu_s(stat_fields(Path(f"/proc/{pid}/stat")))


def measure_stack(streams: list[int], max_new_tokens: int) -> str:
    """CPU seconds per audio second of each service process while `omni bench` drives the gateway."""
    omni = [sys.executable, "-m", "omni.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        serve = subprocess.Popen(
            [*omni, "serve", "--tiny-variant", "custom_voice", "--max-streams", str(max(streams)), "--work-dir", tmp]
            + ["--port", str(bench.free_port()), "--grpc-port", str(bench.free_port())],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            pids, url = {}, None
            for line in serve.stdout:
                if "HTTP API:" in line:
                    url = line.split("HTTP API:")[1].split()[0].removesuffix("/v1")
                for name in ("refenc", "codec", "talker", "gateway"):
                    if line.strip().startswith(f"{name} service:"):
                        pids[name] = int(line.split("(pid ")[1].split(")")[0])
                if line.startswith("Press Ctrl-C"):
                    break
            # omni serve prints the backends' pids; the gateway is its child whose command line says so.
            children = Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
            for child in map(int, children):
                if "gateway" in Path(f"/proc/{child}/cmdline").read_text().split("\0"):
                    pids["gateway"] = child
            if url is None or set(pids) != {"refenc", "codec", "talker", "gateway"}:
                raise SystemExit(f"omni serve did not start (logs in {tmp})")
            rows = []
            for n in streams:
                out = Path(tmp) / f"bench-{n}.json"
                cmd = [*omni, "bench", "--url", url, "--concurrency", str(n), "--requests", str(n), "--no-progress"]
                cmd += ["--max-new-tokens", str(max_new_tokens), "--seed", "0", "--out", str(out)]
                loops = ("talker", "codec")
                before = {name: process_cpu_s(pid) for name, pid in pids.items()}
                before |= {f"{name} loop": main_thread_cpu_s(pids[name]) for name in loops}
                subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                after = {name: process_cpu_s(pid) for name, pid in pids.items()}
                after |= {f"{name} loop": main_thread_cpu_s(pids[name]) for name in loops}
                level = json.loads(out.read_text())["levels"][0]
                cpu = {name: after[name] - before[name] for name in before}
                rows.append((n, level, cpu))
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=60)
    lines = ["| streams | ok | audio s | wall s | audio-s/s | CPU ms per audio-s: gateway | talker | codec | "
             "talker loop | codec loop |"]  # fmt: skip
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for n, level, cpu in rows:
        per = {k: f"{v / max(level['audio_s'], 1e-9) * 1e3:,.1f}" for k, v in cpu.items()}
        lines.append(
            f"| {n} | {level['succeeded']}/{level['requests']} | {level['audio_s']:.1f} | {level['elapsed_s']:.2f} | "
            f"{level['audio_s_per_s']:.1f} | {per['gateway']} | {per['talker']} | {per['codec']} | "
            f"{per['talker loop']} | {per['codec loop']} |"
        )
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """Per-chunk CPU µs by span (and per-step ms of the worker thread), one column per level."""

    def us_per_chunk(r: dict, seconds: float) -> str:
        return f"{seconds / r['chunks'] * 1e6:,.0f}"

    lines = ["| | " + " | ".join(f"{r['streams']} streams" for r in rows) + " |", "|---" * (len(rows) + 1) + "|"]

    def add(name: str, values: list[str]) -> None:
        lines.append(f"| {name} | " + " | ".join(values) + " |")

    add("chunks (timed pass)", [f"{r['chunks']}" for r in rows])
    add("steps", [f"{r['steps']}" for r in rows])
    add("  of them with a model call", [f"{r['decodes']}" for r in rows])
    add("server host CPU µs/chunk (no model call)", [us_per_chunk(r, r["process_cpu"] - r["model"]) for r in rows])
    add("  worker: step − model (pack, copies)", [us_per_chunk(r, r["step"] - r["model"]) for r in rows])
    add("  loop: deliver", [us_per_chunk(r, r["deliver"]) for r in rows])
    add("  loop: other (gRPC, protobuf, servicer)", [us_per_chunk(r, r["loop_cpu"] - r["deliver"]) for r in rows])
    grpc_threads = [r["process_cpu"] - r["loop_cpu"] - r["step"] for r in rows]
    add(
        "  grpc threads (process − loop − worker)",
        [f"{t / r['chunks'] * 1e6:,.0f}" for r, t in zip(rows, grpc_threads, strict=True)],
    )
    add("  model call (not host overhead)", [us_per_chunk(r, r["model"]) for r in rows])
    add("client CPU µs/chunk", [us_per_chunk(r, r["client_cpu"]) for r in rows])
    add("worker ms/step (step − model)", [f"{(r['step'] - r['model']) / r['steps'] * 1e3:.2f}" for r in rows])
    add("wall s (timed pass)", [f"{r['client_wall']:.2f}" for r in rows])
    add("steps/s", [f"{r['steps'] / r['client_wall']:.1f}" for r in rows])
    add("audio-s/s (tiny model, CPU)", [f"{r['audio_s_per_s']:.0f}" for r in rows])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--frames", type=int, default=61, help="frames per utterance (61 = 1 + 4 × 15)")
    parser.add_argument("--cprofile", type=int, default=0, help="print the server loop's top N functions")
    parser.add_argument("--model", type=Path, help="codec checkpoint (default: a tiny random one)")
    parser.add_argument(
        "--null-model", action="store_true", help="replace the decode call by zeros of its output shape (host only)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per level; the least disturbed is shown")
    parser.add_argument("--stack", action="store_true", help="the whole stack: omni serve (tiny) + omni bench")
    parser.add_argument("--max-new-tokens", type=int, default=31, help="--stack: codec frames per request cap")
    parser.add_argument("--s16", action="store_true", help="streams ask for S16LE PCM instead of F32LE")
    parser.add_argument(
        "--shared-calls", type=int, default=0, help="streams go over this many DecodeMany calls (0: a Decode each)"
    )
    # The server half (run by the client half in a subprocess).
    parser.add_argument("--serve-codec", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--max-streams", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stack:
        print(measure_stack(args.streams, args.max_new_tokens))
        return
    if args.s16:
        bench.common_pb2 = _S16Formats()
    if args.serve_codec:
        serve_codec(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or bench.write_model(Path(tmp) / "codec-tiny", bench.TINY_DECODER)
        rows = []
        for n in args.streams:
            rows.append(
                measure_level(model, n, args.frames, args.cprofile, args.null_model, args.repeat, args.shared_calls)
            )
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "cprofile"}), flush=True)
            if args.cprofile:
                print(rows[-1]["cprofile"], flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
