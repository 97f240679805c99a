"""A vocoder residual unit's tail on one GPU: the separate kernels against kernels/unit_tail.py, by tile size.

    python tools/bench_unit_tail.py --rows 128 --frames 15 --tiles 128x128x32w4s3 128x256x64w8s3 --out tail.json
    TRITON_INTERPRET=1 python tools/bench_unit_tail.py --device cpu --tiny --dtype float32   # CPU smoke test

For each vocoder block of the released decoder config (its channels C, and T = frames x the upsampling so far) it
builds one residual unit's tail inputs for `rows` streams as the channels-last vocoder holds them (conv1's output
dense [B, T, C], the residual x a slice along T of a wider buffer, the next SnakeBeta's buffer) and times, with
CUDA events (median of --repeats timings of --iters launches each):

  separate     SnakeBeta (snakebeta_cl), conv2 as a 1x1 cuDNN conv2d over channels_last, the add with the next
               SnakeBeta (bias_residual_cl): the decoder without `unit_tail_kernel`
  fused T      unit_tail with tiles T (BMxBNxBKwWARPSsSTAGES)
  gemm T       snakebeta_cl, then unit_tail with tiles T on its output (no SnakeBeta prologue): how much of the fused
               kernel's time the prologue costs
  conv2 T      (--conv2) snakebeta_cl, then kernels/vocoder_conv.vocoder_conv_residual with tiles T: conv2, the add and
               the next SnakeBeta in a TMA-fed GEMM's epilogue (the decoder's `conv2_kernel`); --no-fused leaves
               the two unit_tail sides out

It prints one table row per block and side (ms, GB/s by the tail's four passes over [B, T, C], the ratio to
separate, the largest difference of the output and the next SnakeBeta from separate's) and a step row: 3 units per
block, summed. A measurement tool: it asserts nothing about speed.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_snakebeta import RESIDUAL_UNITS, step_shapes  # noqa: E402 (a sibling script: the step's shapes)
from bench_snakebeta import time_ms as cuda_time_ms  # noqa: E402
from omni.kernels.channels_last import bias_residual_cl, channels_last_empty, snakebeta_cl  # noqa: E402
from omni.kernels.tiles import Tiles  # noqa: E402
from omni.kernels.unit_tail import DEFAULT_TILES, conv2_matrix, unit_tail  # noqa: E402
from omni.kernels.vocoder_conv import vocoder_conv_residual  # noqa: E402

from omni.models.qwen3_tts.codec import CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER  # noqa: E402


def block_shapes(cfg: CodecDecoderConfig, frames: int) -> list[tuple[int, int]]:
    """(C, T) of each vocoder block's residual units for `frames` new codec frames (bench_snakebeta's step shapes
    less the first block's input)."""
    return [(channels, length) for channels, length, _ in step_shapes(cfg, frames)[1:]]


def tail_inputs(rows: int, channels: int, length: int, dtype: torch.dtype, device: str, seed: int) -> dict:
    """One residual unit's tail inputs, laid out as ChannelsLastVocoder lays them out."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen, device=device) * scale

    h = randn(rows, length, channels, scale=2.0).to(dtype).transpose(1, 2)
    x = randn(rows, length + 8, channels, scale=2.0).to(dtype).transpose(1, 2)[..., 4 : length + 4]
    weight = randn(channels, channels, 1, scale=channels**-0.5).to(dtype)
    h_bias, act_a, act_b, bias, alpha, beta = (randn(channels, scale=0.5) for _ in range(6))
    return {
        "h": h,
        "x": x,
        "weight_cl": weight.unsqueeze(2).contiguous(memory_format=torch.channels_last),
        "w": conv2_matrix(weight),
        "h_bias": h_bias,
        "act": (act_a, act_b),
        "bias": bias,
        "snake": (alpha, beta),
        "buffer": channels_last_empty(rows, channels, length + 6, h),  # the next conv's [history ‖ new]
    }


def separate(i: dict, fast_sin: bool) -> torch.Tensor:
    h = snakebeta_cl(i["h"], *i["act"], bias=i["h_bias"], fast_sin=fast_sin)
    y = F.conv2d(h.unsqueeze(2), i["weight_cl"]).squeeze(2)
    return bias_residual_cl(i["x"], y, i["bias"], snake=i["snake"], snake_out=i["buffer"][..., 6:], fast_sin=fast_sin)


def conv2_gemm(i: dict, fast_sin: bool, tiles: Tiles) -> torch.Tensor:
    """The decoder's conv2_kernel: snakebeta_cl, then conv2 + the add + the next SnakeBeta by vocoder_conv_residual."""
    h = snakebeta_cl(i["h"], *i["act"], bias=i["h_bias"], fast_sin=fast_sin)
    snake = {"snake": i["snake"], "snake_out": i["buffer"][..., 6:], "fast_sin": fast_sin}
    return vocoder_conv_residual(h, i["w"], i["x"], i["bias"], tiles, **snake)


def fused(i: dict, fast_sin: bool, tiles: Tiles, prologue: bool = True) -> torch.Tensor:
    """unit_tail with `tiles`; without the prologue, on snakebeta_cl's output (the gemm-only side)."""
    if prologue:
        h, h_bias, act = i["h"], i["h_bias"], i["act"]
    else:
        h, h_bias, act = snakebeta_cl(i["h"], *i["act"], bias=i["h_bias"], fast_sin=fast_sin), None, None
    fused_args = {"snake": i["snake"], "snake_out": i["buffer"][..., 6:], "fast_sin": fast_sin, "tiles": tiles}
    return unit_tail(h, h_bias, act, i["w"], i["x"], i["bias"], **fused_args)


def time_ms(fn, device: str, iters: int, repeats: int) -> float:
    """Median over `repeats` of the mean time of `iters` back-to-back calls (CUDA events, bench_snakebeta's timer;
    wall clock on CPU)."""
    if device == "cuda":
        return statistics.median(cuda_time_ms(fn, iters) for _ in range(repeats))
    fn()  # compile and warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--rows", type=int, default=128, help="streams in the step")
    parser.add_argument("--frames", type=int, default=15, help="new codec frames per stream")
    parser.add_argument("--tiles", nargs="+", default=[str(DEFAULT_TILES)], help="BMxBNxBKwWARPSsSTAGES each")
    parser.add_argument("--no-gemm-only", action="store_true", help="skip the gemm-only sides")
    parser.add_argument("--no-fused", action="store_true", help="skip the unit_tail sides (fused and gemm-only)")
    parser.add_argument("--conv2", action="store_true", help="time the conv2_kernel side (vocoder_conv_residual)")
    parser.add_argument("--fast-sine", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="tiny widths (CPU smoke test)")
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args()
    if args.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("--device cpu needs TRITON_INTERPRET=1 (the Triton kernels run in the interpreter)")
    tiles = [Tiles.parse(t) for t in args.tiles]
    dtype = getattr(torch, args.dtype)
    cfg = CodecDecoderConfig(**TINY_DECODER) if args.tiny else CodecDecoderConfig()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rows, step, shapes = [], {}, block_shapes(cfg, args.frames)
    print(f"{'C':>5} {'T':>6} {'side':<24} {'ms':>8} {'GB/s':>7} {'vs sep':>7} {'out diff':>9} {'snake diff':>10}")
    for k, (channels, length) in enumerate(shapes):
        inputs = tail_inputs(args.rows, channels, length, dtype, args.device, seed=k)
        nbytes = 4 * args.rows * channels * length * inputs["h"].element_size()  # read h and x, write two tensors
        want = separate(inputs, args.fast_sine)
        want_snake = inputs["buffer"][..., 6:].clone()
        sides = {"separate": lambda i=inputs: separate(i, args.fast_sine)}
        for t in tiles:
            if not args.no_fused:
                sides[f"fused {t}"] = lambda i=inputs, t=t: fused(i, args.fast_sine, t)
            if not (args.no_fused or args.no_gemm_only):
                sides[f"gemm {t}"] = lambda i=inputs, t=t: fused(i, args.fast_sine, t, prologue=False)
            if args.conv2:
                sides[f"conv2 {t}"] = lambda i=inputs, t=t: conv2_gemm(i, args.fast_sine, t)
        base_ms = None
        for name, fn in sides.items():
            try:
                got = fn()
            except Exception as exc:  # noqa: BLE001 - a tile size the GPU cannot run (shared memory): say so, go on
                print(f"{channels:>5} {length:>6} {name:<24} error: {exc!r}"[:300], flush=True)
                rows.append({"channels": channels, "length": length, "side": name, "error": repr(exc)})
                continue
            out_diff = float((got.float() - want.float()).abs().max())
            snake_diff = float((inputs["buffer"][..., 6:].float() - want_snake.float()).abs().max())
            ms = time_ms(fn, args.device, args.iters, args.repeats)
            base_ms = base_ms or ms
            row = {
                "channels": channels,
                "length": length,
                "side": name,
                "ms": round(ms, 4),
                "gb_per_s": round(nbytes / ms / 1e6, 1),
                "vs_separate": round(ms / base_ms, 3),
                "out_max_abs": out_diff,
                "snake_max_abs": snake_diff,
            }
            rows.append(row)
            step[name] = step.get(name, 0.0) + RESIDUAL_UNITS * ms
            print(
                f"{channels:>5} {length:>6} {name:<24} {ms:>8.4f} {row['gb_per_s']:>7.0f} {row['vs_separate']:>7.3f}"
                f" {out_diff:>9.2e} {snake_diff:>10.2e}",
                flush=True,
            )
        del inputs
    print(f"\nthe step's {RESIDUAL_UNITS * len(shapes)} unit tails, summed:")
    for name, ms in step.items():  # a side that failed on some block sums fewer tails: marked
        if sum(r["side"] == name and "ms" in r for r in rows) < len(shapes):
            name += " (some blocks failed)"
        print(f"  {name:<24} {ms:8.3f} ms  ({ms / step['separate']:.3f} of separate)")
    if args.out:
        env = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
        summary = {"env": env, "args": vars(args), "rows": rows, "step_ms": step}
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
