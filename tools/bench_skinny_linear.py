"""Time kernels/skinny_linear.py against cuBLAS (F.linear) at 1-128 rows on the 1.7B talker's GEMMs (needs a GPU).

For every kind of GEMM of the fused 1.7B talker and its code predictor (random weights, bf16), every row count
and every launch setting (block_n, block_k, num_warps): GPU microseconds per call from a CUDA graph of --iters calls
(as the talker replays them) taking copies of the weight in turn so that each call reads it from HBM (--cold-mb; run
153 timed one weight, warm in L2), the weight bytes read per second, and the largest error against the fp32 product
relative to its largest value (cuBLAS's alongside). The summary names, per weight and rows, what the talker with
the service's default settings runs (`module_launch`: a launch, or cuBLAS) and its time, cuBLAS's, the row kernel's
fastest launch, and with --dot-block-n the dot kernel's fastest (block_n x --dot-block-k x --dot-warps x
--dot-stages x --dot-split-k).

    PYTHONPATH=. python3 tools/bench_skinny_linear.py --rows 1 2 4 8 --out $OUT/skinny_linear.json
"""

import argparse
import itertools
import json
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_decode_attention import time_us  # noqa: E402
from bench_talker_step import build_talker  # noqa: E402
from omni.kernels.skinny_linear import KERNEL_MAX_ROWS, LAUNCH, skinny_linear  # noqa: E402
from omni.services.talker.config import TalkerConfig  # noqa: E402
from omni.services.talker.service import apply_kernels  # noqa: E402

from omni.models.qwen3_tts.talker_fused import module_launch, skinny_gemms  # noqa: E402


def gemm_weights(talker) -> dict[str, tuple[torch.nn.Module, torch.Tensor, torch.Tensor | None]]:
    """One (module, weight, bias) per kind of GEMM in a talker's step (`skinny_gemms`, the first layer's), named
    without the layer index."""
    found: dict[str, tuple[torch.nn.Module, torch.Tensor, torch.Tensor | None]] = {}
    for name, gemm in skinny_gemms(talker).items():
        found.setdefault(re.sub(r"\.\d+\.", ".", name), gemm)
    return found


def weight_copies(weight: torch.Tensor, min_bytes: int) -> list[torch.Tensor]:
    """The weight and enough copies of it to hold `min_bytes` together: a graph whose calls take them in turn reads
    each from HBM, as the step does (one weight replayed alone stays in the 50 MB L2: run 153 read the talker's
    down_proj at 5.0 TB/s, above the HBM's 4.8)."""
    size = weight.numel() * weight.element_size()
    return [weight] + [weight.clone() for _ in range(max(0, -(-min_bytes // size) - 1))]


def in_turn(fn, x: torch.Tensor, weights: list[torch.Tensor], bias: torch.Tensor | None, **kwargs):
    """A call of fn(x, weight, bias) that takes the next of `weights` each time (each captured call its own)."""
    turn = itertools.cycle(weights)
    return lambda: fn(x, next(turn), bias, **kwargs)


def relative_error(got: torch.Tensor, exact: torch.Tensor) -> float:
    return float((got.float() - exact).abs().max() / exact.abs().max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--block-n", type=int, nargs="*", default=[2, 4, 8, 16], help="the row kernel's (none if empty)")
    ap.add_argument("--block-k", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument("--num-warps", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--dot-block-n", type=int, nargs="*", default=[], help="the dot kernel's launches (none if empty)")
    ap.add_argument("--dot-block-k", type=int, nargs="+", default=[128, 256, 512])
    ap.add_argument("--dot-warps", type=int, nargs="+", default=[4])
    ap.add_argument("--dot-stages", type=int, nargs="+", default=[3, 4])
    ap.add_argument("--dot-split-k", type=int, nargs="+", default=[1], help="programs sharing K a feature block")
    ap.add_argument("--shapes", nargs="*", help="names from the list printed first (all if none)")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument(
        "--cold-mb",
        type=int,
        default=256,
        help="copies of each weight, this many MB together, taken in turn (0: one weight, warm in L2)",
    )
    ap.add_argument("--out", help="write the rows and the summary as JSON here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_skinny_linear needs a CUDA GPU (tests/test_skinny_linear.py covers the math)")
    if max(args.rows) > KERNEL_MAX_ROWS:
        raise SystemExit(f"the kernels take at most {KERNEL_MAX_ROWS} rows")
    talker, _ = build_talker("1.7B", torch.bfloat16, "cuda")
    apply_kernels(talker, TalkerConfig(), on_cuda=True)  # as the talker service builds it, its default settings
    weights = gemm_weights(talker)
    shapes = {name: tuple(w.shape) + (("bias",) if b is not None else ()) for name, (_, w, b) in weights.items()}
    print("shapes:", shapes)
    names = args.shapes or list(weights)
    launches = [{"block_n": n, "block_k": k, "num_warps": w}
                for n, k, w in itertools.product(args.block_n, args.block_k, args.num_warps)]  # fmt: skip
    launches += [{"dot": True, "block_n": n, "block_k": k, "num_warps": w, "num_stages": st, "split_k": sk}
                 for n, k, w, st, sk in itertools.product(args.dot_block_n, args.dot_block_k, args.dot_warps,
                                                          args.dot_stages, args.dot_split_k)]  # fmt: skip
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows_out, summary = [], []
    print(f"default {LAUNCH}; {torch.cuda.get_device_name()}; weights taken in turn from {args.cold_mb} MB")
    print("| weight | rows | launch | us | GB/s | rel err | cuBLAS us | cuBLAS rel err |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name in names:
        module, weight, bias = weights[name]
        weight_bytes = weight.numel() * weight.element_size()
        copies = weight_copies(weight, args.cold_mb << 20)
        for rows in args.rows:
            x = torch.randn(rows, weight.shape[1], device="cuda", generator=gen).bfloat16()
            exact = F.linear(x.float(), weight.float(), bias.float() if bias is not None else None)
            cublas_err = relative_error(F.linear(x, weight, bias), exact)
            cublas_us = time_us(in_turn(F.linear, x, copies, bias), args.iters)
            talker_launch = module_launch(module, weight, rows, interpreted=False)  # None: the talker runs cuBLAS
            talker_us = cublas_us if talker_launch is None else time_us(
                in_turn(skinny_linear, x, copies, bias, max_rows=rows, launch=talker_launch), args.iters)  # fmt: skip
            best = {False: None, True: None}  # the row kernel's fastest launch, the dot kernel's
            for launch in launches:
                try:
                    err = relative_error(skinny_linear(x, weight, bias, rows, launch), exact)
                    us = time_us(in_turn(skinny_linear, x, copies, bias, max_rows=rows, launch=launch), args.iters)
                except Exception as e:  # a setting the compiler refuses is a row, not the end
                    print(f"| {name} | {rows} | {launch} | error: {str(e)[:80]} | | | | |", flush=True)
                    continue
                row = {"weight": name, "rows": rows, **launch, "us": round(us, 2), "rel_err": err,
                       "gb_per_s": round(weight_bytes / us / 1e3, 1), "cublas_us": round(cublas_us, 2),
                       "cublas_rel_err": cublas_err}  # fmt: skip
                rows_out.append(row)
                print(f"| {name} | {rows} | {launch} | {row['us']} | {row['gb_per_s']} | {err:.2e} | "
                      f"{row['cublas_us']} | {cublas_err:.2e} |", flush=True)  # fmt: skip
                dot = bool(launch.get("dot"))
                if best[dot] is None or us < best[dot]["us"]:
                    best[dot] = row
            summary.append({"weight": name, "rows": rows, "talker_launch": talker_launch or "cuBLAS",
                            "talker_us": round(talker_us, 2), "cublas_us": round(cublas_us, 2),
                            "best": best[False], "best_dot": best[True]})  # fmt: skip
    print("| weight | rows | talker runs | its us | cuBLAS us | best us | best launch | best dot us | its launch |")
    print("|---|---:|---|---:|---:|---:|---|---:|---|")
    for s in summary:
        best, dot = s["best"] or {}, s["best_dot"] or {}
        launch = {k: best.get(k) for k in LAUNCH}
        dot_launch = {k: dot.get(k) for k in ("block_n", "block_k", "num_warps", "num_stages", "split_k")}
        print(f"| {s['weight']} | {s['rows']} | {s['talker_launch']} | {s['talker_us']} | {s['cublas_us']} | "
              f"{best.get('us')} | {launch} | {dot.get('us')} | {dot_launch} |")  # fmt: skip
    if args.out:
        result = {"cold_mb": args.cold_mb, "rows": rows_out, "summary": summary}
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
