"""Time the draw kernel (kernels/sampling.py `draw`) on sampled and greedy rows (needs a GPU).

For the code predictor's and the talker's vocabularies (2,048 and 3,072) and every row count: GPU microseconds per
draw from a CUDA graph of --iters draws (as the talker replays them) on random bf16 logits, every row sampled with the
model's defaults (temperature 0.9, top-k 50, top-p 1; --top-p to change it) or every row greedy, at each
--num-warps a row ("default": the kernel's own choice, 8 at these vocabularies) and each --top-k-search (the
bisection, `draw`'s default, or the radix select), with the ids checked against the default launch's. The
difference between sampled and greedy is what the sampling costs a draw (run 169: the top-k search's 32 halvings,
each a reduction across the program's warps, most of it).

    PYTHONPATH=. python3 tools/bench_draw.py --rows 1 16 32 64 --out $OUT/draw.json
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni.kernels.sampling import draw  # noqa: E402


def sampling_rows(b: int, sample: bool, top_p: float, device: str) -> dict:
    """`draw`'s per-row parameters: every row sampled (top-k 50, the given top-p) or every row greedy."""
    return dict(
        do_sample=torch.full((b,), sample, dtype=torch.bool, device=device),
        temperature=torch.full((b,), 0.9, device=device),
        top_k=torch.full((b,), 50, dtype=torch.int64, device=device),
        top_p=torch.full((b,), top_p, device=device),
        seed=torch.arange(b, dtype=torch.int64, device=device) * 7919 + 1,
        counter=torch.arange(b, dtype=torch.int64, device=device),
    )


def time_draws(logits: torch.Tensor, params: dict, iters: int, **launch) -> tuple[float, torch.Tensor]:
    """Microseconds per draw from one CUDA graph of `iters` draws (each counter offset its own) launched with `launch`
    (`draw`'s num_warps, radix_top_k), and the last draw's ids."""
    out = torch.empty(logits.shape[0], dtype=torch.int64, device=logits.device)
    for _ in range(2):  # compile and warm up outside the capture
        draw(logits, **params, counter_offset=iters - 1, out=out, **launch)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(iters):
            draw(logits, **params, counter_offset=i, out=out, **launch)
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
    ap.add_argument("--num-warps", nargs="+", default=["default"], help="warps a row: default, 1, 2, 4, 8 or 16")
    ap.add_argument("--top-k-search", nargs="+", default=["bisection"], choices=["bisection", "radix"])
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_draw.py needs a GPU")
    torch.manual_seed(0)
    results = []
    warps = [None if w == "default" else int(w) for w in args.num_warps]
    print("| vocab | rows | warps | top-k search | sampled us / draw | greedy us / draw | ids = default's |")
    print("|---|---|---|---|---|---|---|")
    for vocab in args.vocabs:
        for b in args.rows:
            logits = (torch.randn(b, vocab, device="cuda") * 3).bfloat16()
            rows = {s: sampling_rows(b, s, args.top_p, "cuda") for s in (True, False)}
            want = {s: draw(logits, **rows[s], counter_offset=args.iters - 1) for s in rows}  # a graph's last draw
            for w in warps:
                for search in args.top_k_search:
                    launch = dict(num_warps=w, radix_top_k=search == "radix")
                    (sampled, got_s), (greedy, got_g) = (time_draws(logits, rows[s], args.iters, **launch)
                                                         for s in (True, False))  # fmt: skip
                    same = bool(torch.equal(got_s, want[True]) and torch.equal(got_g, want[False]))
                    label = "default" if w is None else w
                    results.append(dict(vocab=vocab, rows=b, num_warps=label, top_k_search=search,
                                        sampled_us=round(sampled, 2), greedy_us=round(greedy, 2),
                                        ids_equal_default=same))  # fmt: skip
                    print(f"| {vocab} | {b} | {label} | {search} | {sampled:.2f} | {greedy:.2f} | {same} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(dict(top_p=args.top_p, iters=args.iters, results=results), indent=1))


if __name__ == "__main__":
    main()
