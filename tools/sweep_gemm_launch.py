"""Time the talker step's GEMM launches in place (needs a GPU): each weight shape's launch pinned to each of a few
dot-kernel candidates, the step captured as the talker replays it, timed against the defaults beside it.

Why: tools/bench_skinny_linear.py times a weight alone, from HBM, with no kernel ahead of it. In the step each GEMM
follows a norm or an attention and launches programmatically; run 181 (H100, 16 rows) had the code predictor's four
GEMMs of a layer at 4.7-7.6 us a launch whatever their bytes (4.2-12.6 MB), the [1024, 2048] o_proj (split-K 4)
the slowest. Here a candidate is kept or dropped by what the whole step takes.

For each row count and weight shape (`shape_classes`: every module of the step whose weight has that shape and that
runs the kernels at those rows), each candidate of `candidates_for` the shape is pinned on those modules
(`skinny_launch`, talker_fused.module_launch) and the step captured and timed, the defaults captured and timed just
before it; `--rounds` passes, every other one in reverse order. The table gives each candidate's step time against
its own baseline, in %, per round.

    PYTHONPATH=. python3 tools/sweep_gemm_launch.py --rows 16,32 --json $OUT/sweep.json
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_talker_step import (  # noqa: E402
    WARMUP_STEPS,
    FreshSlots,
    build_mode,
    build_talker,
    dot_spec,
    time_steps,
    timed_runner,
)

from omni.models.qwen3_tts.talker_fused import module_launch, skinny_gemms  # noqa: E402
from omni.talker.cuda_graphs import TalkerGraphs  # noqa: E402

DEFAULTS = (
    "fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64"
    "+projected-lookups+lookup-kernels+step-inputs+step-rope-tables"
)
# The dot kernel's launches tried on every shape they fit, as `dot_spec` reads them (BNxBKsSkP, 4 warps; what
# --candidates and bench_talker_step's +pin-... take). The 128-feature ones (session 51) after run 184 found the
# fewest programs best on [1024, 2048]: on the wide weights the widest block runs 182-184 tried had 64 features (96-192
# programs).
CANDIDATES = ["16x512s3k1", "16x256s4k1", "32x256s4k1", "64x128s4k1", "16x256s4k2", "32x128s4k2", "16x128s4k4",
              "32x128s4k4", "128x64s4k1", "128x128s3k1"]  # fmt: skip


def candidates_for(shape: tuple[int, int], default: dict | None, tried: list[dict] | None = None) -> list[dict]:
    """The launches `tried` (CANDIDATES if None) that fit a weight [N, K] (block_n at most N; each split-K share at
    least a chunk), less the default launch."""
    n, k = shape
    tried = [dot_spec(spec) for spec in CANDIDATES] if tried is None else tried
    fits = [c for c in tried if c["block_n"] <= n and k // c.get("split_k", 1) >= c["block_k"]]
    return [launch for launch in fits if launch != default]


def shape_classes(talker, rows: int) -> dict[tuple[int, int], list[tuple[torch.nn.Module, torch.Tensor]]]:
    """The (module, weight) GEMMs of the step that run the kernels at `rows` rows, by the weight's shape, the shape
    of most GEMMs first."""
    classes: dict[tuple[int, int], list[tuple[torch.nn.Module, torch.Tensor]]] = {}
    for module, weight, _ in skinny_gemms(talker).values():
        if module_launch(module, weight, rows, interpreted=False) is not None:
            classes.setdefault(tuple(weight.shape), []).append((module, weight))
    return dict(sorted(classes.items(), key=lambda kv: -len(kv[1])))


def pin(modules: list[torch.nn.Module], launch: dict | None) -> None:
    """Pin `launch` on the modules, or unpin with None (their own settings again)."""
    for module in modules:
        module.__dict__.pop("skinny_launch", None)
        if launch is not None:
            module.skinny_launch = launch


def step_ms(runner, rows: int, iters: int) -> float:
    """The step at `rows` rows captured as the talker captures it (its warm-up steps on the scratch slot), then timed
    (ms): WARMUP_STEPS + iters steps on slots 0 .. rows - 1."""
    graphs = TalkerGraphs(runner, [rows])
    ms = time_steps(graphs.decode_step, torch.arange(rows, device=runner.device), iters)
    del graphs
    torch.cuda.empty_cache()
    return ms


def label(launch: dict) -> str:
    """A launch as the table names it: features x K chunk, warps, stages, split-K shares."""
    n, k, warps, stages = launch["block_n"], launch["block_k"], launch["num_warps"], launch.get("num_stages", 3)
    return f"{n}x{k} w{warps} s{stages} k{launch.get('split_k', 1)}"


def check_launch(shape: tuple[int, int], rows: int, launch: dict) -> dict:
    """One launch on a random weight of `shape` at `rows` rows, alone: eager, then in a CUDA graph under programmatic
    launch (as the step runs it), each against F.linear in fp32 (largest error over the largest value). Run one
    launch a process: a kernel that faults leaves the CUDA context unusable."""
    from omni.kernels.programmatic_launch import set_programmatic_launch
    from omni.kernels.skinny_linear import skinny_linear

    torch.manual_seed(0)
    weight = torch.randn(shape, device="cuda", dtype=torch.bfloat16) / shape[1] ** 0.5
    x = torch.randn(rows, shape[1], device="cuda", dtype=torch.bfloat16)
    exact = torch.nn.functional.linear(x.float(), weight.float())
    found = {}
    set_programmatic_launch(True)
    try:
        found["eager"] = skinny_linear(x, weight, max_rows=rows, launch=launch)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            found["graph"] = skinny_linear(x, weight, max_rows=rows, launch=launch)
        graph.replay()
        torch.cuda.synchronize()
    finally:
        set_programmatic_launch(False)
    scale = float(exact.abs().max())
    return {name: round(float((y.float() - exact).abs().max()) / scale, 5) for name, y in found.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="1.7B")
    ap.add_argument("--rows", default="16,32")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--prompt-len", type=int, default=160)
    ap.add_argument("--shapes", default="", help="only these weight shapes, e.g. 1024x2048,4096x1024")
    ap.add_argument("--skip-shapes", default="", help="not these weight shapes")
    ap.add_argument("--candidates", default="", help="these launches (BNxBKsSkP, e.g. 128x64s4k1) for CANDIDATES")
    ap.add_argument("--check", default="", help="NxK:ROWS:I: only run candidate I (0-based) of that shape alone")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "sweep_gemm_launch.json"))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_gemm_launch needs a CUDA GPU (the kernels' launches are covered by the CPU tests)")
    tried = [dot_spec(spec) for spec in args.candidates.split(",")] if args.candidates else None
    if args.check:
        dims, rows, index = args.check.split(":")
        shape = tuple(int(d) for d in dims.split("x"))
        launch = candidates_for(shape, None, tried)[int(index)]
        print(f"check {dims} at {rows} rows, {label(launch)}:", check_launch(shape, int(rows), launch), flush=True)
        return
    rows_list = [int(r) for r in args.rows.split(",")]
    only, skip = (
        {tuple(int(d) for d in s.split("x")) for s in text.split(",") if s} for text in (args.shapes, args.skip_shapes)
    )
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    talker, config = build_talker(args.model, torch.bfloat16, "cuda")
    build_mode(talker, DEFAULTS)
    runner = timed_runner(talker, config, DEFAULTS, max(rows_list), args.max_len, "cuda", args.prompt_len)
    results: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "model": args.model,
                     "modes": DEFAULTS, "iters": args.iters, "rows": {}}  # fmt: skip
    fresh = FreshSlots(runner, args.prompt_len)
    start = time.perf_counter()
    for rows in rows_list:
        per_shape = results["rows"][rows] = {}
        for shape, gemms in shape_classes(talker, rows).items():
            if (only and shape not in only) or shape in skip:
                continue
            modules = [module for module, _ in gemms]
            default = module_launch(*gemms[0], rows, interpreted=False)
            candidates = candidates_for(shape, default, tried)
            found = {"modules": len(gemms), "default": label(default), "base_ms": [],
                     "candidates": {label(c): [] for c in candidates}}  # fmt: skip
            per_shape[f"{shape[0]}x{shape[1]}"] = found
            for turn in range(args.rounds):
                for launch in candidates if turn % 2 == 0 else candidates[::-1]:
                    fresh.reserve(2 * (WARMUP_STEPS + args.iters))  # the pair's steps on the real slots
                    base = step_ms(runner, rows, args.iters)
                    pin(modules, launch)
                    try:
                        ms = step_ms(runner, rows, args.iters)
                    finally:
                        pin(modules, None)
                    found["base_ms"].append(round(base, 3))
                    found["candidates"][label(launch)].append(round((ms / base - 1) * 100, 2))
            best = min(found["candidates"].items(), key=lambda kv: statistics.mean(kv[1]), default=None)
            print(f"rows {rows} {shape} {len(modules)} modules, default {found['default']}: "
                  + ", ".join(f"{k} {v}" for k, v in found["candidates"].items())
                  + (f" | best {best[0]} {statistics.mean(best[1]):+.2f}%" if best else ""),
                  f"({time.perf_counter() - start:.0f} s)", flush=True)  # fmt: skip
            with open(args.json, "w") as f:  # after every shape: a run cut short keeps what it timed
                json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
