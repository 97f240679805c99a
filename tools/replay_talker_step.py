"""The talker's decode step replayed for a profiler, nothing else: one mode's build (bench_talker_step's modes), its
slots prefilled, then `--steps` graph replays of `--batch` rows (eager steps off CUDA), so that Nsight Compute sees
the step's kernels in their order and context:

    ncu --kernel-name regex:2x1_v_bz_TNN --launch-skip 150 --launch-count 150 --cache-control none \\
        --clock-control none python3 tools/replay_talker_step.py --mode fused+sampler+... --batch 1

Nothing is timed or checked here (bench_talker_step.py does both)."""

import argparse

import torch
from bench_talker_step import build_mode, build_talker, parse_modes, timed_runner

from omni.talker.cuda_graphs import TalkerGraphs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="1.7B", help="tiny, 0.6B or 1.7B (random weights)")
    ap.add_argument("--mode", required=True, help="one of bench_talker_step.py's --modes")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--prompt-len", type=int, default=160)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    args = ap.parse_args()
    (mode,) = parse_modes(args.mode)
    torch.manual_seed(0)
    talker, config = build_talker(args.model, getattr(torch, args.dtype), args.device)
    build_mode(talker, mode)
    runner = timed_runner(talker, config, mode, args.batch, args.max_len, args.device, args.prompt_len)
    slots = torch.arange(args.batch, device=args.device)
    step = TalkerGraphs(runner, [args.batch]).decode_step if args.device == "cuda" else runner.decode_step
    for _ in range(args.steps):
        codes, _ = step(slots)
    print(f"{mode}: {args.steps} steps of {args.batch} rows; last codes of row 0: {codes[0].tolist()}")


if __name__ == "__main__":
    main()
