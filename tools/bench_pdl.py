"""Programmatic dependent launch on chains of short kernels in a CUDA graph (needs an sm_90 GPU).

Isolates what kernels/programmatic_launch.py can give from the rest of a talker step: one row of the 1.7B talker's
width through a chain of --kernels launches, --iters chains a CUDA graph (bench_decode_attention.time_us), captured
with the launch off, on, and on with the GEMMs' early weights. Two chains: `norms` (add_rms_norm after add_rms_norm:
the smallest kernels a step has) and `norms+gemms` (add_rms_norm then the skinny row kernel on a [hidden, hidden]
weight, in turn; --weights distinct weights, so most GEMMs stream theirs from HBM as a step's do). Prints
microseconds per chain and per kernel and whether each setting's output equals the chain's without the launch, bit
for bit. If "on" is no faster than "off", the launch attribute did not reach the graph (or the driver ignores it).

    PYTHONPATH=. python3 tools/bench_pdl.py --kernels 200 --out $OUT/pdl.json
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_decode_attention import time_us  # noqa: E402
from omni.kernels.programmatic_launch import set_programmatic_launch  # noqa: E402
from omni.kernels.skinny_linear import row_launch_for, skinny_linear  # noqa: E402
from omni.kernels.transformer_fused import add_rms_norm  # noqa: E402

SETTINGS = {"off": (False, False), "on": (True, False), "on+early-weights": (True, True)}


def make_chain(kind: str, kernels: int, hidden: int, weights: int, device: str, dtype: torch.dtype):
    """A function running `kernels` launches on one row (the chain `kind`) and returning its last output; its inputs
    are made here, seeded, so every setting runs the same values."""
    if kind not in ("norms", "norms+gemms"):
        raise ValueError(f"unknown chain {kind!r}")
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(1, hidden, device=device, generator=gen).to(dtype)
    delta = torch.randn(1, hidden, device=device, generator=gen).to(dtype) * 0.01
    norm_weight = torch.ones(hidden, device=device, dtype=dtype)
    mats = [(torch.randn(hidden, hidden, device=device, generator=gen) / hidden**0.5).to(dtype) for _ in range(weights)]

    def run() -> torch.Tensor:
        total, h = x, delta
        for i in range(kernels // 2 if kind == "norms+gemms" else kernels):
            total, h = add_rms_norm(total, delta if kind == "norms" else h, norm_weight, 1e-6)
            if kind == "norms+gemms":
                w = mats[i % len(mats)]
                h = skinny_linear(h, w, max_rows=1, launch=row_launch_for(w))  # the next add's delta
        return h

    return run


def time_chain(run, setting: tuple[bool, bool], iters: int) -> tuple[float, torch.Tensor]:
    """Microseconds per run of the chain from a CUDA graph of `iters` runs captured with the launch `setting`
    (bench_decode_attention.time_us), and the last run's output."""
    outputs = []
    set_programmatic_launch(*setting)
    try:
        us = time_us(lambda: outputs.append(run()), iters)
    finally:
        set_programmatic_launch(False)
    return us, outputs[-1].clone()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=200, help="launches a chain (a norms+gemms chain: half of each)")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--weights", type=int, default=16, help="distinct GEMM weights a norms+gemms chain cycles")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_pdl.py needs a GPU")
    results = []
    print("| chain | setting | us / chain | us / kernel | output = off's |")
    print("|---|---|---|---|---|")
    for kind in ("norms", "norms+gemms"):
        run = make_chain(kind, args.kernels, args.hidden, args.weights, "cuda", torch.bfloat16)
        want = None
        for name, setting in SETTINGS.items():
            if kind == "norms" and setting[1]:
                continue  # no GEMM: early weights change nothing
            us, out = time_chain(run, setting, args.iters)
            want = out if want is None else want
            same = bool(torch.equal(out, want))
            results.append(dict(chain=kind, setting=name, us_per_chain=round(us, 1),
                                us_per_kernel=round(us / args.kernels, 3), equal_to_off=same))  # fmt: skip
            print(f"| {kind} | {name} | {us:.1f} | {us / args.kernels:.3f} | {same} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(dict(vars(args), results=results), indent=1))


if __name__ == "__main__":
    main()
