"""Talker prefill on a GPU: what one engine step's prompt work costs, split into host time and GPU time.

The talker service prefills every step's new prompts in one batched eager forward (`TalkerRunner.begin_prefill` per
request, then `prefill_batch`), on the same thread and stream as the decode step, so every decoding stream waits for
it. This times exactly that call sequence at the released shapes (random weights, the service's fused kernels and
decode-attention cache), for a few batch sizes and prompt lengths:

- `host_ms`: until the Python calls return (launches, host syncs inside the calls),
- `total_ms`: until the GPU has finished too,
- with --profile: the top ops by host (self CPU) time and the GPU kernel total of one prefill.

Three switches separate the candidate causes of the service's slower prefill (docs/perf-notes.md, "Talker
prefill"): `--vary` gives every timed call prompts of a length not seen before (the service's pattern: a new shape
for SDPA and the allocator on most requests), `--sdpa efficient|math|cudnn` pins the attention kernel, and
`--decode-thread B` replays a captured batch-B decode step in a loop on another thread (as the talker's decode
loop would) while the prefills are timed.

    python tools/bench_prefill.py --model 1.7B --batches 1,4,16 --lengths 40,120 --profile
    python tools/bench_prefill.py --model 1.7B --batches 1,16 --lengths 40 --vary --sdpa efficient --decode-thread 16
"""

import argparse
import contextlib
import json
import os
import threading
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


def time_prefill(runner: TalkerRunner, make_prompts, iters: int) -> dict:
    """`make_prompts()` gives the prompts of one call (the same ones, or new lengths with --vary)."""
    for _ in range(2):
        prefill(runner, make_prompts())
    sync()
    host, total = [], []
    for _ in range(iters):
        prompts = make_prompts()
        start = time.perf_counter()
        host.append(prefill(runner, prompts))
        sync()
        total.append((time.perf_counter() - start) * 1e3)
    return {"host_ms": round(sorted(host)[iters // 2], 2), "total_ms": round(sorted(total)[iters // 2], 2)}


def sdpa_backends(name: str):
    """A context pinning F.scaled_dot_product_attention to one kernel (`default`: PyTorch's choice)."""
    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
    }
    return sdpa_kernel([backend[name]])


class DecodeThread:
    """Replays a captured decode step of `batch` slots (past the prefill slots) in a loop, each with its host copy."""

    def __init__(self, runner: TalkerRunner, first_slot: int, batch: int, length: int) -> None:
        from omni.talker.cuda_graphs import TalkerGraphs

        gen = torch.Generator().manual_seed(1)
        params = SamplingParams(seed=2, min_new_tokens=10_000, max_new_tokens=10_000)
        params.max_new_tokens = runner.max_len - length
        params.min_new_tokens = params.max_new_tokens
        for slot in range(first_slot, first_slot + batch):
            runner.prefill(slot, prompt_of(length, gen), params)
        self.slots = torch.arange(first_slot, first_slot + batch, device=runner.device)
        self.runner = runner
        # CUDA: the service's graph replay; CPU (smoke runs): the eager step.
        self.step = TalkerGraphs(runner, [batch]).decode_step if runner.device.type == "cuda" else runner.decode_step
        self.stop, self.steps = threading.Event(), 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            if int(self.runner.next_pos[self.slots].max()) >= self.runner.max_len - 2:
                return  # out of positions: the numbers after this are without the decode thread
            codes, _ = self.step(self.slots)
            codes.cpu()
            self.steps += 1


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
    ap.add_argument("--vary", action="store_true", help="a prompt length not used before in every call")
    ap.add_argument("--sdpa", default="default", choices=["default", "efficient", "math", "cudnn"])
    ap.add_argument("--decode-thread", type=int, default=0, help="replay a decode step of this batch on a thread")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_prefill.json"))
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    lengths = [int(n) for n in args.lengths.split(",")]
    torch.manual_seed(0)
    decode_slots = args.decode_thread
    max_len = max(lengths) + 80 + (args.iters + 2) * max(batches) * 2 * args.vary + 2048 * bool(decode_slots)
    runner = build_runner(args.model, max(batches) + decode_slots, max_len, args.device, not args.no_fused)
    gen = torch.Generator().manual_seed(0)
    results = {
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "model": args.model,
        "fused": not args.no_fused,
        "vary": args.vary,
        "sdpa": args.sdpa,
        "decode_thread": decode_slots,
        "rows": [],
    }
    decoder = DecodeThread(runner, max(batches), decode_slots, 40) if decode_slots else None
    if decoder is not None:
        decoder.thread.start()
    fresh = iter(range(1, 10**6))
    with sdpa_backends(args.sdpa):
        for length in lengths:
            for b in batches:
                fixed = [prompt_of(length, gen) for _ in range(b)]

                def make_prompts(length=length, b=b, fixed=fixed):
                    # --vary: each prompt one position longer than any before it (a new shape every call).
                    return [prompt_of(length + next(fresh), gen) for _ in range(b)] if args.vary else fixed

                steps_before = decoder.steps if decoder else 0
                row = {"batch": b, "prompt_len": length, **time_prefill(runner, make_prompts, args.iters)}
                if decoder is not None:
                    row["decode_steps_meanwhile"] = decoder.steps - steps_before
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
    if decoder is not None:
        decoder.stop.set()
        decoder.thread.join()
    if args.profile:
        results["profile"] = profile_prefill(runner, [prompt_of(lengths[0], gen)])
        print(json.dumps(results["profile"], indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
