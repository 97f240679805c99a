"""Time kernels/wide_linear.py against cuBLAS (F.linear) at 128-1,024 rows on the 1.7B talker's GEMMs (needs a GPU).

For every kind of GEMM of the fused 1.7B talker and its code predictor (random weights, bf16; the service's build),
every row count and every tile size: GPU microseconds per call from a CUDA graph of --iters calls taking copies of
the weight in turn (each call reads it from HBM, as in the step; tools/bench_skinny_linear.py's way), TFLOP/s, and
the largest error against the fp32 product relative to its largest value, cuBLAS's beside it. cuBLAS is timed twice:
as the talker calls it, and with `torch.backends.cuda.preferred_blas_library("cublaslt")`. For an MLP's gate_up
weight the gated kernel (SiLU(gate) * up in its epilogue) is timed against cuBLAS + the silu_mul kernel as well, its
bits checked against the ungated kernel's output through silu_mul.

    PYTHONPATH=. python3 tools/bench_wide_linear.py --rows 128 512 1024 --out $OUT/wide_linear.json
"""

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_decode_attention import time_us  # noqa: E402
from bench_skinny_linear import gemm_weights, in_turn, relative_error, weight_copies  # noqa: E402
from bench_talker_step import build_talker  # noqa: E402
from omni.kernels.tiles import Tiles  # noqa: E402
from omni.kernels.transformer_fused import silu_mul, silu_mul_reference  # noqa: E402
from omni.kernels.wide_linear import wide_linear  # noqa: E402
from omni.services.talker.config import TalkerConfig  # noqa: E402
from omni.services.talker.service import apply_kernels  # noqa: E402

TILES = ["64x64x64w4s4", "64x128x64w4s4", "128x64x64w4s4", "128x128x64w4s4", "128x128x64w8s3", "128x256x64w8s3",
         "64x256x64w4s3", "128x128x128w8s3", "64x128x128w4s3"]  # fmt: skip


def linear_then_silu_mul(x: torch.Tensor, weight: torch.Tensor, linear) -> torch.Tensor:
    """An MLP's gate_up GEMM by `linear`, then the silu_mul kernel over its halves (the talker's path past its
    skinny rows)."""
    gate_up = linear(x, weight)
    n = weight.shape[0] // 2
    return silu_mul(gate_up[..., :n], gate_up[..., n:])


def ungated_then_silu_mul(x: torch.Tensor, weight: torch.Tensor, side: str) -> torch.Tensor:
    """A gated side's ("gated <tiles>") reference: the same tiles' ungated kernel, then the silu_mul kernel."""
    tiles = Tiles.parse(side.split()[1])
    return linear_then_silu_mul(x, weight, lambda a, w: wide_linear(a, w, tiles))


def cublaslt(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear with cuBLASLt preferred (what the call picks is recorded when a graph captures it)."""
    before = torch.backends.cuda.preferred_blas_library()
    torch.backends.cuda.preferred_blas_library("cublaslt")
    try:
        return F.linear(x, weight, bias)
    finally:
        torch.backends.cuda.preferred_blas_library(before)


def sides(weight: torch.Tensor, tiles: list[Tiles], gated: bool) -> dict:
    """name -> fn(x, weight, bias) for every side timed on this weight (gated: the MLP's gate_up with its SiLU)."""
    if gated:
        out = {"cuBLAS+silu_mul": lambda x, w, b: linear_then_silu_mul(x, w, F.linear),
               "cuBLASLt+silu_mul": lambda x, w, b: linear_then_silu_mul(x, w, cublaslt)}  # fmt: skip
        out |= {f"gated {t}": (lambda x, w, b, t=t: wide_linear(x, w, t, gated=True)) for t in tiles}
        return out
    out = {"cuBLAS": F.linear, "cuBLASLt": cublaslt}
    out |= {str(t): (lambda x, w, b, t=t: wide_linear(x, w, t)) for t in tiles}
    return out


def exact_output(x: torch.Tensor, weight: torch.Tensor, gated: bool) -> torch.Tensor:
    y = F.linear(x.float(), weight.float())
    if not gated:
        return y
    n = weight.shape[0] // 2
    return silu_mul_reference(y[..., :n], y[..., n:])


def bench_weight(name: str, weight: torch.Tensor, rows: int, tiles: list[Tiles], gated: bool, args, gen) -> list:
    """Every side's row for one weight at `rows` rows (a side the compiler refuses is a row with its error)."""
    x = torch.randn(rows, weight.shape[1], device=weight.device, generator=gen).to(weight.dtype)
    exact = exact_output(x, weight, gated)
    flop = 2.0 * rows * weight.shape[0] * weight.shape[1]
    copies = weight_copies(weight, args.cold_mb << 20)
    out = []
    for side, fn in sides(weight, tiles, gated).items():
        row = {"weight": name, "shape": list(weight.shape), "rows": rows, "side": side, "gated": gated}
        try:
            got = fn(x, weight, None)
            if gated and side.startswith("gated"):  # the same bits as the ungated kernel through silu_mul
                row["same_bits_as_ungated"] = bool(torch.equal(got, ungated_then_silu_mul(x, weight, side)))
            row["rel_err"] = relative_error(got, exact)
            us = time_us(in_turn(fn, x, copies, None), args.iters)
        except Exception as e:  # a tile the compiler refuses (shared memory) is a row, not the end
            row["error"] = f"{type(e).__name__}: {str(e)[:100]}"
            out.append(row)
            continue
        row |= {"us": round(us, 2), "tflops": round(flop / us / 1e6, 1)}
        out.append(row)
    return out


def summarize(rows: list[dict]) -> list[dict]:
    """Per (weight, rows, gated): cuBLAS's time (the talker's path), cuBLASLt's, the fastest wide tile and its time,
    and the ratio of the fastest wide tile to cuBLAS."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["weight"], r["rows"], r["gated"]), []).append(r)
    out = []
    for (weight, n, gated), group in groups.items():
        timed = {r["side"]: r for r in group if "us" in r}
        base = timed.get("cuBLAS+silu_mul" if gated else "cuBLAS")
        lt = timed.get("cuBLASLt+silu_mul" if gated else "cuBLASLt")
        wide = [r for side, r in timed.items() if not side.startswith("cuBLAS")]
        best = min(wide, key=lambda r: r["us"]) if wide else None
        out.append({"weight": weight, "shape": group[0].get("shape"), "rows": n, "gated": gated,
                    "cublas_us": base and base["us"],
                    "cublaslt_us": lt and lt["us"], "best_tiles": best and best["side"], "best_us": best and best["us"],
                    "best_over_cublas": round(best["us"] / base["us"], 3) if best and base else None})  # fmt: skip
    return out


def tables(summary: list[dict], rows: int, at_most: float) -> dict:
    """The tiles to run each weight shape at, for bench_talker_step's --wide-tiles: at `rows` rows, the fastest wide
    tile of every weight whose time is at most `at_most` of cuBLAS's (gated: of cuBLAS + silu_mul)."""
    out: dict[str, dict[str, str]] = {"tiles": {}, "gated": {}}
    for s in summary:
        if s["rows"] == rows and s["best_over_cublas"] is not None and s["best_over_cublas"] <= at_most:
            n, k = s["shape"]
            out["gated" if s["gated"] else "tiles"][f"{n}x{k}"] = s["best_tiles"].removeprefix("gated ")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[128, 512, 1024])
    ap.add_argument("--tiles", nargs="+", default=TILES, help="BMxBNxBKwWARPSsSTAGES")
    ap.add_argument("--shapes", nargs="*", help="names from the list printed first (all if none)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--cold-mb", type=int, default=256, help="copies of each weight, this many MB, taken in turn")
    ap.add_argument("--out", help="write the rows and the summary as JSON here")
    ap.add_argument("--tables-out", help="write the tiles by weight shape (`tables`) as JSON here")
    ap.add_argument("--table-rows", type=int, default=512, help="the rows the tables are chosen at")
    ap.add_argument("--table-at-most", type=float, default=0.97, help="a tile's time over cuBLAS's to be chosen")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_wide_linear needs a CUDA GPU (tests/test_wide_linear.py covers the math)")
    tiles = [Tiles.parse(t) for t in args.tiles]
    talker, _ = build_talker("1.7B", torch.bfloat16, "cuda")
    apply_kernels(talker, TalkerConfig(), on_cuda=True)
    weights = gemm_weights(talker)
    print("shapes:", {name: list(w.shape) for name, (_, w, _) in weights.items()})
    print(f"{torch.cuda.get_device_name()}; weights taken in turn from {args.cold_mb} MB")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    print("| weight | rows | side | us | TFLOP/s | rel err |")
    print("|---|---:|---|---:|---:|---:|")
    for name in args.shapes or list(weights):
        weight = weights[name][1]
        for n in args.rows:
            for gated in (False, True) if name.endswith("gate_up_weight") else (False,):
                for r in bench_weight(name, weight, n, tiles, gated, args, gen):
                    rows.append(r)
                    shown = r.get("error") or f"{r['us']} | {r['tflops']} | {r['rel_err']:.2e}"
                    bits = "" if "same_bits_as_ungated" not in r else f" (bits {r['same_bits_as_ungated']})"
                    print(f"| {name} | {n} | {r['side']}{bits} | {shown} |", flush=True)
    summary = summarize(rows)
    print("| weight | rows | gated | cuBLAS us | cuBLASLt us | best tiles | best us | best / cuBLAS |")
    print("|---|---:|---|---:|---:|---|---:|---:|")
    for s in summary:
        print(f"| {s['weight']} | {s['rows']} | {s['gated']} | {s['cublas_us']} | {s['cublaslt_us']} | "
              f"{s['best_tiles']} | {s['best_us']} | {s['best_over_cublas']} |")  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps({"cold_mb": args.cold_mb, "rows": rows, "summary": summary}, indent=1))
    if args.tables_out:
        chosen = tables(summary, args.table_rows, args.table_at_most)
        print("tables:", chosen)
        Path(args.tables_out).write_text(json.dumps(chosen, indent=1))


if __name__ == "__main__":
    main()
