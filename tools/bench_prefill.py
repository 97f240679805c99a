"""Talker prefill on a GPU: what one engine step's prompt work costs, split into host time and GPU time.

The talker service prefills every step's new prompts in one batched eager forward (`TalkerRunner.begin_prefill` per
request, then `prefill_batch`), on the same thread and stream as the decode step, so every decoding stream waits for
it. This times exactly that call sequence at the released shapes (random weights, the service's fused kernels and
decode-attention cache), for a few batch sizes and prompt lengths:

- `host_ms`: until the Python calls return (launches, host syncs inside the calls),
- `total_ms`: until the GPU has finished too,
- with --profile: the top ops by host (self CPU) time and the GPU kernel total of one prefill.

    python tools/bench_prefill.py --model 1.7B --batches 1,4,16 --lengths 40,120 --profile
"""

import argparse
import json
import os
import time

import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels
from omni.models.qwen3_tts.tiny import SHAPES, tiny_config
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams


def build_runner(name: str, slots: int, max_len: int, device: str, fused: bool) -> TalkerRunner:
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice", **SHAPES[name.lower()]))
    with torch.device(device):
        talker = Qwen3TTSTalker(config.talker)
    talker = talker.to(torch.bfloat16).eval()
    if fused:
        fuse_talker_kernels(talker)
    return TalkerRunner(talker, config, slots, max_len, device, scratch_slot=True, decode_kernel=fused)


def prompt_of(length: int, gen: torch.Generator) -> TalkerPrompt:
    return TalkerPrompt(
        text_ids=torch.randint(0, 150_000, (length,), generator=gen),
        codec_ids=torch.full((length,), NO_ID),
        trailing_ids=torch.randint(0, 150_000, (8,), generator=gen),
    )


def prefill(runner: TalkerRunner, prompts: list[TalkerPrompt]) -> float:
    """The engine's prefill of one step for `prompts` (slots 0..n-1); returns host ms (until the calls return)."""
    start = time.perf_counter()
    params = SamplingParams(seed=1, max_new_tokens=64)
    chunks = []
    for slot, prompt in enumerate(prompts):
        emb = runner.begin_prefill(slot, prompt, params)
        chunks.append((slot, emb, 0, len(prompt)))
    completed = runner.prefill_batch(chunks)
    runner.finished[completed].tolist()  # the engine reads EOS flags back here (a host sync)
    return (time.perf_counter() - start) * 1e3


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_prefill(runner: TalkerRunner, prompts: list[TalkerPrompt], iters: int) -> dict:
    for _ in range(2):
        prefill(runner, prompts)
    sync()
    host, total = [], []
    for _ in range(iters):
        start = time.perf_counter()
        host.append(prefill(runner, prompts))
        sync()
        total.append((time.perf_counter() - start) * 1e3)
    return {"host_ms": round(sorted(host)[iters // 2], 2), "total_ms": round(sorted(total)[iters // 2], 2)}


def profile_prefill(runner: TalkerRunner, prompts: list[TalkerPrompt], top: int = 20) -> dict:
    from torch.profiler import ProfilerActivity, profile

    prefill(runner, prompts)
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        prefill(runner, prompts)
        sync()
    events = prof.key_averages()
    gpu_us = sum(e.self_device_time_total for e in events if e.device_type.name == "CUDA")
    cpu = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "gpu_kernel_ms": round(gpu_us / 1e3, 3),
        "kernel_launches": sum(e.count for e in events if e.device_type.name == "CUDA"),
        "top_host_ops": [
            {"op": e.key[:80], "calls": e.count, "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 3)} for e in cpu
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="1.7B")
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--lengths", default="40,120")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-fused", action="store_true", help="plain PyTorch layers (the service fuses on CUDA)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of the script (tiny model, --no-fused)")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_prefill.json"))
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    lengths = [int(n) for n in args.lengths.split(",")]
    torch.manual_seed(0)
    runner = build_runner(args.model, max(batches), max(lengths) + 80, args.device, not args.no_fused)
    gen = torch.Generator().manual_seed(0)
    results = {
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "model": args.model,
        "fused": not args.no_fused,
        "rows": [],
    }
    for length in lengths:
        for b in batches:
            prompts = [prompt_of(length, gen) for _ in range(b)]
            row = {"batch": b, "prompt_len": length, **time_prefill(runner, prompts, args.iters)}
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
    if args.profile:
        results["profile"] = profile_prefill(runner, [prompt_of(lengths[0], gen)])
        print(json.dumps(results["profile"], indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
