"""Talker prefill on a GPU: what one engine step's prompt work costs, split into host time and GPU time.

The talker service admits every step's new prompts in one call (`TalkerRunner.begin_prefill_batch`) and prefills
them in one batched forward (`prefill_batch`, or `PrefillGraphs` on CUDA), on the same thread and stream as the
decode step, so every decoding stream waits for it. This times exactly that call sequence at the released shapes
(random weights, the service's fused kernels and decode-attention cache), for a few batch sizes and prompt lengths:

- `host_ms`: until the Python calls return (launches, host syncs inside the calls),
- `total_ms`: until the GPU has finished too,
- with --profile: the top ops by host (self CPU) time and the GPU kernel total of one prefill.

Three switches separate the candidate causes of the service's slower prefill (docs/perf-notes.md, "Talker
prefill"): `--vary` gives every timed call prompts of a new longest length (the service's pattern: a new shape
for SDPA and the allocator on most requests), `--sdpa math|cudnn` pins the attention kernel, and
`--decode-thread B` replays a captured batch-B decode step in a loop on another thread (as the talker's decode
loop would) while the prefills are timed.

`--graphs` (CUDA) captures `PrefillGraphs` (one CUDA graph of `prefill_padded` per (batch, width) bucket) and times
the same call sequence through it next to the eager one (`graph_host_ms`, `graph_total_ms`; `begin_prefill_batch`
stays eager), and checks that it leaves the same state as `prefill_batch`: for each row's prompts, and once chunked
(`--check-chunk` positions per call, so starts > 0 and several buckets), the max abs difference of `last_hidden`
(bf16: attention over the whole cache sums in another order) and whether the drawn ids and counters are equal.

    python tools/bench_prefill.py --model 1.7B --batches 1,4,16 --lengths 40,120 --profile
    python tools/bench_prefill.py --model 1.7B --batches 1,16 --lengths 40 --vary --sdpa math --decode-thread 16
    python tools/bench_prefill.py --model 1.7B --batches 1,4,16 --lengths 40,120 --vary --graphs --max-len 2048
"""

import argparse
import json
import os
import threading
import time

import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.talker_fused import fuse_talker_kernels
from omni.models.qwen3_tts.tiny import SHAPES, tiny_config
from omni.talker.attention_backend import BACKENDS, use_attention_backend
from omni.talker.cuda_graphs import PrefillGraphs
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams
from omni.talker.step_profile import summarize_profile


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


def prefill(runner: TalkerRunner, prompts: list[TalkerPrompt], graphs: PrefillGraphs | None = None) -> float:
    """The engine's prefill of one step for `prompts` (slots 0..n-1), through `graphs` if given; returns host ms
    (until the calls return)."""
    start = time.perf_counter()
    params = SamplingParams(seed=1, max_new_tokens=64)
    embeddings = runner.begin_prefill_batch([(slot, prompt, params) for slot, prompt in enumerate(prompts)])
    chunks = [(slot, emb, 0, len(emb)) for slot, emb in enumerate(embeddings)]
    completed = graphs.prefill(chunks) if graphs is not None else runner.prefill_batch(chunks)
    runner.finished[completed].tolist()  # the engine reads EOS flags back here (a host sync)
    return (time.perf_counter() - start) * 1e3


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_prefill(runner: TalkerRunner, make_prompts, iters: int, graphs: PrefillGraphs | None = None) -> dict:
    """`make_prompts()` gives the prompts of one call (the same ones, or new lengths with --vary)."""
    for _ in range(2):
        prefill(runner, make_prompts(), graphs)
    sync()
    host, total = [], []
    for _ in range(iters):
        prompts = make_prompts()
        start = time.perf_counter()
        host.append(prefill(runner, prompts, graphs))
        sync()
        total.append((time.perf_counter() - start) * 1e3)
    return {"host_ms": round(sorted(host)[iters // 2], 2), "total_ms": round(sorted(total)[iters // 2], 2)}


def prefill_state(
    runner: TalkerRunner, prompts: list[TalkerPrompt], chunk: int | None, graphs: PrefillGraphs | None
) -> dict[str, torch.Tensor]:
    """Prefill `prompts` into slots 0..n-1 (all prompts' next `chunk` positions per call, as the engine) and return
    the per-slot state it leaves."""
    params = SamplingParams(seed=1, max_new_tokens=64)
    embeddings = runner.begin_prefill_batch([(slot, prompt, params) for slot, prompt in enumerate(prompts)])
    step = chunk or max(map(len, prompts))
    for start in range(0, max(map(len, prompts)), step):
        chunks = [(s, e, start, min(start + step, len(e))) for s, e in enumerate(embeddings) if start < len(e)]
        (graphs.prefill if graphs is not None else runner.prefill_batch)(chunks)
    slots = torch.arange(len(prompts), device=runner.device)
    names = ("pending", "next_pos", "drawn", "finished", "seen", "last_hidden")
    return {name: getattr(runner, name)[slots].clone() for name in names}


def check_graphs(runner: TalkerRunner, graphs: PrefillGraphs, prompts: list[TalkerPrompt], chunk=None) -> dict:
    """The graph path against `prefill_batch` on the same prompts and slots: bf16 hidden within rounding, same ids."""
    want = prefill_state(runner, prompts, chunk, None)
    got = prefill_state(runner, prompts, chunk, graphs)
    diff = (got["last_hidden"].float() - want["last_hidden"].float()).abs().max().item()
    return {
        "last_hidden_max_abs_diff": round(diff, 5),
        "last_hidden_max_abs": round(want["last_hidden"].float().abs().max().item(), 3),
        "pending_equal": torch.equal(got["pending"], want["pending"]),
        "counters_equal": all(torch.equal(got[n], want[n]) for n in ("next_pos", "drawn", "finished", "seen")),
    }


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


def profile_prefill(
    runner: TalkerRunner, prompts: list[TalkerPrompt], graphs: PrefillGraphs | None = None, top: int = 20
) -> dict:
    from torch.profiler import ProfilerActivity, profile

    prefill(runner, prompts, graphs)
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        prefill(runner, prompts, graphs)
        sync()
    return summarize_profile(prof, top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="1.7B")
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--lengths", default="40,120")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-fused", action="store_true", help="plain PyTorch layers (the service fuses on CUDA)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of the script (tiny model, --no-fused)")
    ap.add_argument("--vary", action="store_true", help="a batch shape not used before in every call")
    ap.add_argument("--sdpa", default="default", choices=BACKENDS)
    ap.add_argument("--decode-thread", type=int, default=0, help="replay a decode step of this batch on a thread")
    ap.add_argument("--graphs", action="store_true", help="also time (and check) the CUDA-graph prefill (CUDA only)")
    ap.add_argument("--graph-batches", default="1,2,4,8,16", help="PrefillGraphs batch buckets")
    ap.add_argument("--graph-widths", default="32,64,128,256,512", help="PrefillGraphs width buckets")
    ap.add_argument("--check-chunk", type=int, default=48, help="--graphs: positions per call of the chunked check")
    ap.add_argument("--max-len", type=int, default=0, help="positions per slot (0: what the run needs; service 2048)")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_prefill.json"))
    args = ap.parse_args()
    if args.graphs and args.device != "cuda":
        ap.error("--graphs captures CUDA graphs: it needs --device cuda (on CPU, run without --graphs)")
    batches = [int(b) for b in args.batches.split(",")]
    lengths = [int(n) for n in args.lengths.split(",")]
    torch.manual_seed(0)
    decode_slots = args.decode_thread
    calls = len(lengths) * len(batches) * ((args.iters + 2) * (1 + args.graphs) + args.graphs)  # --vary: 1 new each
    max_len = max(lengths) + 80 + (calls + max(batches)) * args.vary + 2048 * bool(decode_slots)
    max_len = max(max_len, args.max_len)
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
        "max_len": max_len,
        "rows": [],
    }
    graphs = None
    if args.graphs:
        sync()
        reserved, began = torch.cuda.memory_reserved(), time.perf_counter()
        batch_buckets = [int(b) for b in args.graph_batches.split(",")]
        graphs = PrefillGraphs(runner, batch_buckets, [int(w) for w in args.graph_widths.split(",")])
        sync()
        results["graphs"] = {
            "buckets": [list(b) for b in graphs.graphs],
            "capture_s": round(time.perf_counter() - began, 2),
            "pool_mib": round((torch.cuda.memory_reserved() - reserved) / 2**20),
        }
        print(json.dumps(results["graphs"]), flush=True)
    decoder = DecodeThread(runner, max(batches), decode_slots, 40) if decode_slots else None
    if decoder is not None:
        decoder.thread.start()
    fresh = iter(range(1, 10**6))
    use_attention_backend(args.sdpa)
    for length in lengths:
        for b in batches:
            fixed = [prompt_of(length, gen) for _ in range(b)]

            def make_prompts(length=length, b=b, fixed=fixed):
                # --vary: the longest prompt one position longer than in any call before (a new shape every
                # call), the others one shorter each.
                if not args.vary:
                    return fixed
                longest = length + next(fresh) + b
                return [prompt_of(longest - j, gen) for j in range(b)]

            steps_before = decoder.steps if decoder else 0
            row = {"batch": b, "prompt_len": length, **time_prefill(runner, make_prompts, args.iters)}
            if graphs is not None:
                timed = time_prefill(runner, make_prompts, args.iters, graphs)
                row.update(graph_host_ms=timed["host_ms"], graph_total_ms=timed["total_ms"])
                row["check"] = check_graphs(runner, graphs, make_prompts())
            if decoder is not None:
                row["decode_steps_meanwhile"] = decoder.steps - steps_before
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
    if decoder is not None:
        decoder.stop.set()
        decoder.thread.join()
    if graphs is not None:
        prompts = [prompt_of(max(lengths), gen) for _ in range(max(batches))]
        results["check_chunked"] = check_graphs(runner, graphs, prompts, args.check_chunk)
        results["graph_replays"], results["graph_eager_calls"] = graphs.replays, graphs.eager_calls
        print(json.dumps({k: results[k] for k in ("check_chunked", "graph_replays", "graph_eager_calls")}), flush=True)
    if args.profile:
        results["profile"] = profile_prefill(runner, [prompt_of(lengths[0], gen)])
        print(json.dumps(results["profile"], indent=1), flush=True)
        if graphs is not None:
            results["graph_profile"] = profile_prefill(runner, [prompt_of(lengths[0], gen)], graphs)
            print(json.dumps(results["graph_profile"], indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
