"""Time the draw kernel (kernels/sampling.py `draw`) by the top-k search's thresholds a round (needs a GPU).

For the code predictor's and the talker's vocabularies (2,048 and 3,072), every row count and every `probes` value:
GPU microseconds per draw from a CUDA graph of --iters draws (as the talker replays them), every row sampled with the
model's defaults (temperature 0.9, top-k 50, top-p 1) or with --top-p, on random bf16 logits; and whether the ids
equal those of the bisection (probes 1), which they must (the search is exact).

    PYTHONPATH=. python3 tools/bench_draw.py --rows 1 16 32 64 --out $OUT/draw.json
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni.kernels.sampling import draw  # noqa: E402


def sampling_rows(b: int, top_p: float, device: str) -> dict:
    """`draw`'s per-row parameters: every row sampled, top-k 50, the given top-p."""
    return dict(
        do_sample=torch.ones(b, dtype=torch.bool, device=device),
        temperature=torch.full((b,), 0.9, device=device),
        top_k=torch.full((b,), 50, dtype=torch.int64, device=device),
        top_p=torch.full((b,), top_p, device=device),
        seed=torch.arange(b, dtype=torch.int64, device=device) * 7919 + 1,
        counter=torch.arange(b, dtype=torch.int64, device=device),
    )


def time_draws(logits: torch.Tensor, params: dict, probes: int, iters: int) -> tuple[float, torch.Tensor]:
    """Microseconds per draw from one CUDA graph of `iters` draws (each counter offset its own), and the ids of the
    last one."""
    out = torch.empty(logits.shape[0], dtype=torch.int64, device=logits.device)
    for _ in range(2):  # compile and warm up outside the capture
        draw(logits, **params, counter_offset=iters - 1, out=out, probes=probes)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(iters):
            draw(logits, **params, counter_offset=i, out=out, probes=probes)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / (5 * iters), out.clone()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 16, 32, 64])
    ap.add_argument("--vocabs", type=int, nargs="+", default=[2048, 3072])
    ap.add_argument("--probes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_draw.py needs a GPU")
    torch.manual_seed(0)
    results = []
    print("| vocab | rows | probes | us / draw | ids = bisection's |\n|---|---|---|---|---|")
    for vocab in args.vocabs:
        for b in args.rows:
            logits = (torch.randn(b, vocab, device="cuda") * 3).bfloat16()
            params = sampling_rows(b, args.top_p, "cuda")
            bisection = None
            for probes in args.probes:
                us, ids = time_draws(logits, params, probes, args.iters)
                bisection = ids if bisection is None or probes == 1 else bisection
                same = bool(torch.equal(ids, bisection))
                results.append(dict(vocab=vocab, rows=b, probes=probes, us=round(us, 2), ids_equal_bisection=same))
                print(f"| {vocab} | {b} | {probes} | {us:.2f} | {same} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(dict(top_p=args.top_p, iters=args.iters, results=results), indent=1))


if __name__ == "__main__":
    main()
