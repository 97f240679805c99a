"""Sweep the decode-attention kernel's launch settings at the talker's shapes (needs a CUDA GPU).

Shapes (1.7B: 16 query heads, 8 kv heads, head dim 128):
  backbone   B rows over a [B, 512, 8, 128] cache, live lengths drawn from 60..250 (prompt + frames so far)
  predictor  B rows over a [B, 16, 8, 128] cache, live lengths 3..16 (the code predictor's 14 single steps)

For each (block_n, num_warps, num_stages) it prints GPU microseconds per call (a CUDA graph of --iters calls), the
bytes of live K/V read per second, and the max abs difference from `decode_attention_reference`; the last line
names the fastest setting per shape. `kernels/decode_attention.LAUNCH` holds the default.

    PYTHONPATH=. python3 tools/bench_decode_attention.py --batches 256 512 --out $OUT/decode_attention.json
"""

import argparse
import functools
import itertools
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni.kernels.decode_attention import (  # noqa: E402
    LAUNCH,
    LAUNCH_SHORT,
    SHORT_CACHE,
    decode_attention,
    decode_attention_reference,
)

HEADS, KV_HEADS, DIM = 16, 8, 128


def case(batch: int, max_len: int, low: int, high: int, seed: int) -> tuple[torch.Tensor, ...]:
    """q, k/v caches, slots (a shuffled subset of a cache twice the batch) and live lengths, in bf16 on the GPU."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, HEADS, DIM, device="cuda", generator=gen).bfloat16()
    k = torch.randn(2 * batch, max_len, KV_HEADS, DIM, device="cuda", generator=gen).bfloat16()
    v = torch.randn(2 * batch, max_len, KV_HEADS, DIM, device="cuda", generator=gen).bfloat16()
    slots = torch.randperm(2 * batch, device="cuda", generator=gen)[:batch]
    lengths = torch.randint(low, high + 1, (batch,), device="cuda", generator=gen)
    return q, k, v, slots, lengths


def time_us(call, iters: int) -> float:
    """GPU microseconds per call, from a CUDA graph of `iters` calls (the talker replays the kernel from a graph;
    timed launch by launch, a kernel of a few tens of microseconds measures Triton's host launch cost instead)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()  # compile and warm up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            call()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--block-n", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--num-warps", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--num-stages", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--shapes", nargs="+", choices=("backbone", "predictor"), default=["backbone", "predictor"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_decode_attention needs a CUDA GPU (tests/test_decode_attention.py covers the math)")
    sizes = {"backbone": (512, 60, 250), "predictor": (16, 3, 16)}  # cache length, live lengths low..high
    shapes = [(f"{kind} B={b}", b, *sizes[kind]) for kind in args.shapes for b in args.batches]
    rows, best = [], {}
    print(f"defaults: {LAUNCH}, up to {SHORT_CACHE} positions {LAUNCH_SHORT}; {torch.cuda.get_device_name()}")
    print("| shape | block_n | warps | stages | us | GB/s | max abs vs reference |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, batch, max_len, low, high in shapes:
        q, k, v, slots, lengths = case(batch, max_len, low, high, seed=batch + max_len)
        want = decode_attention_reference(q, k, v, slots, lengths).float()
        live_bytes = int(lengths.sum()) * KV_HEADS * DIM * 2 * k.element_size()
        for block_n, warps, stages in itertools.product(args.block_n, args.num_warps, args.num_stages):
            launch = {"block_n": block_n, "num_warps": warps, "num_stages": stages}
            try:
                call = functools.partial(decode_attention, q, k, v, slots, lengths, launch)
                got = call().float()
                us = time_us(call, args.iters)
            except Exception as e:  # a setting the compiler refuses (shared memory) is a row, not the end
                print(f"| {name} | {block_n} | {warps} | {stages} | error: {str(e)[:80]} | | |", flush=True)
                continue
            row = {"shape": name, **launch, "us": round(us, 1), "gb_per_s": round(live_bytes / us / 1e3, 1),
                   "max_abs": float((got - want).abs().max())}  # fmt: skip
            rows.append(row)
            print(f"| {name} | {block_n} | {warps} | {stages} | {row['us']} | {row['gb_per_s']} | "
                  f"{row['max_abs']:.4f} |", flush=True)  # fmt: skip
            if name not in best or us < best[name]["us"]:
                best[name] = row
    for name, row in best.items():
        current = LAUNCH_SHORT if name.startswith("predictor") else LAUNCH
        default = next((r for r in rows if r["shape"] == name and all(r[k] == current[k] for k in current)), {})
        print(f"best {name}: {row} (default {default.get('us')} us)", flush=True)
    if args.out:
        defaults = {"long": LAUNCH, "short": LAUNCH_SHORT, "short_cache": SHORT_CACHE}
        Path(args.out).write_text(json.dumps({"defaults": defaults, "rows": rows, "best": best}, indent=1))


if __name__ == "__main__":
    main()
