"""The talker engine on a GPU, synchronous against asynchronous scheduling: same codes, and frames per second.

Builds the released 1.7B (or 0.6B) talker shape with random weights on the device, as the service does on CUDA
(fused kernels, the sampler kernel, decode and prefill CUDA graphs), then runs the same closed batch of requests
through `TalkerEngine` twice: with `async_scheduling` off and on. Requests have mixed prompt lengths; even ones are
greedy, odd ones seeded sampling, all forced to `--frames` frames. Every request's codes must be equal in both runs
(the scheduling changes when work is queued, not what is computed); any difference raises. Each run reports wall
time, frames per second and the engine's mean step time.

No gRPC and no codec here: this isolates the engine's own host time per step from the service's.

    python tools/check_talker_engine.py --requests 256 --frames 125 --slots 256
"""

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from omni.services.common.config import capture_buckets
from omni.services.common.logging import setup_logging
from omni.services.talker.config import TalkerConfig
from omni.services.talker.metrics import TalkerMetrics
from omni.services.talker.service import stream_chunking

from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels
from omni.talker.cuda_graphs import PrefillGraphs, TalkerGraphs
from omni.talker.engine import Chunk, ChunkPlan, Finished, Request, TalkerEngine
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_talker_step import build_talker  # noqa: E402 (a sibling script: the released talker shapes)


def requests_for(
    n: int, frames: int, seed: int, lengths: tuple[int, int] = (20, 120)
) -> list[tuple[TalkerPrompt, SamplingParams]]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = int(torch.randint(*lengths, (1,), generator=gen))
        prompt = TalkerPrompt(
            text_ids=torch.randint(0, 150_000, (length,), generator=gen),
            codec_ids=torch.full((length,), NO_ID),
            trailing_ids=torch.randint(0, 150_000, (int(torch.randint(0, 40, (1,), generator=gen)),), generator=gen),
        )
        sampled = i % 2 == 1
        params = SamplingParams(seed=7000 + i, do_sample=sampled, subtalker_dosample=sampled)
        params.min_new_tokens = params.max_new_tokens = frames + 1  # frames + 1 ids: `frames` frames, no early EOS
        out.append((prompt, params))
    return out


async def run_engine(
    engine: TalkerEngine, work: list[tuple[TalkerPrompt, SamplingParams]], plan: ChunkPlan
) -> tuple[list[np.ndarray], list[float]]:
    """Every request submitted at once (a burst, as a closed loop's opening wave), chunked by `plan`; returns each
    request's codes and its first chunk's ms from submission (its `first_chunk_ms`)."""

    async def one(i: int, prompt: TalkerPrompt, params: SamplingParams) -> tuple[np.ndarray, float]:
        request = engine.submit(Request(f"r{i}", prompt, params, plan=plan))
        codes = []
        while not isinstance(item := await request.outputs.get(), Finished):
            if not isinstance(item, Chunk):
                raise RuntimeError(f"request {i} failed: {item!r}")
            codes.append(item.codes)
        return np.concatenate(codes), item.first_chunk_ms

    engine.start()
    try:
        done = await asyncio.gather(*(one(i, p, s) for i, (p, s) in enumerate(work)))
        return [codes for codes, _ in done], [ms for _, ms in done]
    finally:
        await engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="1.7B")
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--frames", type=int, default=125)
    parser.add_argument("--slots", type=int, default=256)
    parser.add_argument("--max-len", type=int, default=512)
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--buckets",
        default="",
        help="decode graph batch sizes (default: the service's). One bucket of --slots rows makes every step the same "
        "shape, so both modes must give equal codes; with several, steps of another batch size (async scheduling "
        "steps a stopped request once more) can pick other GEMM kernels and differ in bf16 rounding",
    )
    parser.add_argument("--prompt-lengths", default="20,120", help="prompt positions drawn from [LO, HI)")
    parser.add_argument(
        "--modes", default="sync,async,sync,async", help="runs in order (the first pays any warm-up); each mode twice "
        "or more is checked for equal codes between its runs, and sync against async when both ran"
    )  # fmt: skip
    parser.add_argument("--trace", action="store_true", help="log the engine's talker.step lines (stderr)")
    defaults = TalkerConfig()
    parser.add_argument("--prefill-budget", type=int, default=defaults.prefill_budget)
    parser.add_argument("--step-token-budget", type=int, default=defaults.step_token_budget)
    parser.add_argument(
        "--prefill-batch-buckets", default=",".join(map(str, defaults.prefill_batch_buckets)), help="prompts per graph"
    )
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    cuda = torch.device(args.device).type == "cuda"  # on CPU (a smoke run): eager, fp32, no Triton
    talker, config = build_talker(args.model, torch.bfloat16 if cuda else torch.float32, args.device)
    if cuda:
        fuse_talker_kernels(talker)
    kernels = {"scratch_slot": cuda, "decode_kernel": cuda, "sampler_kernel": cuda}
    runner = TalkerRunner(talker, config, args.slots, args.max_len, args.device, **kernels)
    graphs = prefill_graphs = None
    if cuda:  # decode graphs for --buckets (default: the service's), prefill graphs as the service captures them
        start = time.perf_counter()
        requested = [int(b) for b in args.buckets.split(",")] if args.buckets else defaults.graph_batch_buckets
        graphs = TalkerGraphs(runner, capture_buckets(requested, args.slots))
        # As the service captures them (its width buckets for these budgets).
        budgets = TalkerConfig(prefill_budget=args.prefill_budget, step_token_budget=args.step_token_budget)
        batches = [int(b) for b in args.prefill_batch_buckets.split(",")]
        prefill_graphs = PrefillGraphs(runner, batches, budgets.prefill_widths())
        print(f"captured in {time.perf_counter() - start:.1f} s", flush=True)
    # Chunked as the service's defaults chunk a stream (the first chunk's frames left to the engine).
    plan, first_chunk, lead = stream_chunking(defaults)
    lo, hi = (int(n) for n in args.prompt_lengths.split(","))
    work = requests_for(args.requests, args.frames, seed=0, lengths=(lo, hi))
    if args.trace:
        setup_logging()

    results, codes = [], {}
    for mode in args.modes.split(","):
        metrics = TalkerMetrics()
        engine = TalkerEngine(
            runner,
            max_queue=args.requests,
            prefill_budget=args.prefill_budget,
            step_token_budget=args.step_token_budget,
            metrics=metrics,
            graphs=graphs,
            prefill_graphs=prefill_graphs,
            async_scheduling=mode == "async",
            trace_steps=args.trace,
            first_chunk=first_chunk,
            lead=lead,
        )
        if cuda:
            torch.cuda.synchronize()
        began = time.perf_counter()
        got, first_chunk_ms = asyncio.run(run_engine(engine, work, plan))
        wall = time.perf_counter() - began
        if any(len(c) != args.frames for c in got):
            raise RuntimeError(f"{mode}: wrong lengths {sorted({len(c) for c in got})}")
        if mode in codes:
            same = all(np.array_equal(a, b) for a, b in zip(codes[mode], got, strict=True))
            if not same:
                raise RuntimeError(f"{mode}: codes differ between two runs of the same mode")
        codes[mode] = got
        registry = metrics.server.registry
        total = {k: registry.get_sample_value(f"omni_talker_step_ms_{k}") for k in ("sum", "count")}
        prefill_steps = int(registry.get_sample_value("omni_talker_prefill_ms_count") or 0)
        row = {
            "mode": mode,
            "requests": args.requests,
            "frames": args.frames,
            "wall_s": round(wall, 3),
            "frames_per_s": round(args.requests * args.frames / wall, 1),
            "steps": int(total["count"]),
            "step_ms": round(total["sum"] / total["count"], 3),
            **{f"first_chunk_p{q}_ms": round(float(np.percentile(first_chunk_ms, q)), 1) for q in (50, 90, 99)},
            "prefill_ms": round(
                (registry.get_sample_value("omni_talker_prefill_ms_sum") or 0.0) / max(prefill_steps, 1), 2
            ),
            "prefill_steps": prefill_steps,
        }
        results.append(row)
        print(json.dumps(row), flush=True)
    both = "sync" in codes and "async" in codes
    equal = sum(np.array_equal(a, b) for a, b in zip(codes["sync"], codes["async"], strict=True)) if both else None
    if both:
        print(f"codes equal, sync vs async: {equal}/{args.requests} requests")
    print("| mode | requests x frames | wall s | frames/s | steps | step ms | first chunk p50 / p90 / p99 ms "
          "| prefill ms |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['mode']} | {r['requests']} x {r['frames']} | {r['wall_s']} | {r['frames_per_s']} | {r['steps']} | "
              f"{r['step_ms']} | {r['first_chunk_p50_ms']} / {r['first_chunk_p90_ms']} / {r['first_chunk_p99_ms']} | "
              f"{r['prefill_ms']} |")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "runs": results, "codes_equal": equal}, f, indent=1)
    if both and equal != args.requests:
        raise SystemExit(f"codes differ between sync and async scheduling in {args.requests - equal} requests")


if __name__ == "__main__":
    main()
