"""The gateway's own work on a request before the talker gets it: `GrpcBackend._prepare` (prompt build, tokenizing,
the GenerateRequest), on this machine's CPU, one request at a time and as a burst of N at once on one event loop.

    python tools/bench_prepare.py [--model CKPT_DIR] [--burst 32] [--rounds 5]

A gateway worker takes a closed loop's opening wave as such a burst (4 workers, 128 streams: 32 each), and in the
GPU runs the gateway-to-talker hop was p99 30-46 ms at 128 streams against 6-8 ms with spread arrivals
(docs/benchmarks.md, session 15). CustomVoice requests over the repo's benchmark sentences (`omni/bench_texts.txt`);
no service is called (the backend's replica addresses are never dialled for this request type). Without --model a
tiny random checkpoint is written to a temp dir: the tokenizer and the prompt layout are the released ones, which is
all `_prepare` reads. Prints one markdown table: per-request ms (median, p90) one at a time, and in the burst the
median and the last request's ms from the burst's start.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path


async def prepared_after_ms(backend, request, start: float) -> float:
    await backend._prepare(request)
    return (time.perf_counter() - start) * 1000.0


async def measure(model_dir: Path, burst: int, rounds: int) -> dict[str, float]:
    from omni.services.gateway.backend import SynthesisRequest
    from omni.services.gateway.grpc_backend import GrpcBackend

    from omni.bench import default_texts, percentile

    backend = GrpcBackend(model_dir, ["127.0.0.1:1"], ["127.0.0.1:1"], ["127.0.0.1:1"])
    speaker = sorted(backend.builder.speakers)[0]
    requests = [
        SynthesisRequest(model="bench", text=text, task_type="CustomVoice", voice=speaker, request_id=str(i))
        for i, text in enumerate(default_texts())
    ]
    for request in requests[:8]:  # warm-up: the tokenizer's caches, the thread pool
        await backend._prepare(request)
    one: list[float] = []
    for _ in range(rounds):
        for request in requests:
            start = time.perf_counter()
            await backend._prepare(request)
            one.append((time.perf_counter() - start) * 1000.0)
    medians, lasts = [], []
    for r in range(rounds):
        wave = [requests[(r * burst + k) % len(requests)] for k in range(burst)]
        start = time.perf_counter()
        done = await asyncio.gather(*(prepared_after_ms(backend, request, start) for request in wave))
        medians.append(statistics.median(done))
        lasts.append(max(done))
    return {
        "one_median_ms": statistics.median(one),
        "one_p90_ms": percentile(one, 90),
        "burst_median_ms": statistics.median(medians),
        "burst_last_ms": statistics.median(lasts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="a checkpoint dir (default: a tiny custom_voice one)")
    parser.add_argument("--burst", type=int, default=32, help="requests prepared at once")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the texts, and bursts (medians kept)")
    args = parser.parse_args(argv)
    if args.burst < 1 or args.rounds < 1:
        parser.error("--burst and --rounds must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if model_dir is None:
            from omni.models.qwen3_tts.tiny import write_tiny_checkpoint

            model_dir = write_tiny_checkpoint(Path(tmp), "custom_voice", seed=0)
        result = asyncio.run(measure(model_dir, args.burst, args.rounds))
    print("| one at a time: median ms | p90 ms | burst | burst: median ms | burst: last ms |")
    print("|---|---|---|---|---|")
    print(
        f"| {result['one_median_ms']:.3f} | {result['one_p90_ms']:.3f} | {args.burst} "
        f"| {result['burst_median_ms']:.1f} | {result['burst_last_ms']:.1f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
