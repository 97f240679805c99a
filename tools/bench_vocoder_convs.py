"""The vocoder's k=7 residual convs one by one on a GPU: cuDNN as the codec calls it against other ways to run them.

    python tools/bench_vocoder_convs.py --rows 128 --frames 15 --tiles 128x128x32w4s4 128x64x64w4s4 --out convs.json
    TRITON_INTERPRET=1 python tools/bench_vocoder_convs.py --device cpu --tiny --dtype float32   # CPU smoke test

For each vocoder block of the released decoder config (channels C; T new samples a stream for `frames` frames) and
each residual unit's dilation (1, 3, 9) it builds conv1's input as the channels-last vocoder holds it (the conv's
[history ‖ new] buffer, [B, T + 6*dilation, C] memory) and times, with CUDA events (median of --repeats timings of
--iters launches each):

  cudnn        conv2d over [B, C, 1, T] in channels-last memory, weight [C, C, 1, 7]: what ChannelsLastVocoder runs
  cudnn-t      conv2d over [B, C, T, 1] in channels-last memory, weight [C, C, 7, 1]: the same memory, the other
               orientation (cuDNN's heuristics may pick other kernels)
  triton T     kernels/vocoder_conv.py with tiles T (BMxBNxBKwWARPSsSTAGES)
  cudnn+snake  cudnn, then the SnakeBeta that follows conv1 (snakebeta_cl with conv1's bias, fast sine): the two
               passes the decoder runs today
  triton T+snake   vocoder_conv with that bias and SnakeBeta in its epilogue: one pass

With --both-tilings, each Triton side also runs with its M tiles forced across batch rows (`triton T flat`, `triton
T flat+snake`) and within each row (`triton T rows`, `triton T rows+snake`): the plain side is the decoder's choice
(`flat_tiles`: whichever takes fewer tiles), these say whether that choice is the faster one.

With --transposed it times the four vocoder blocks' transposed convs instead (kernel 2r, stride r, C -> C/2, over
the [carried sample ‖ new] buffer; "dil" is then the rate r):

  cudnn        conv_transpose2d over [B, C, 1, T+1] in channels-last memory, trimmed as CausalConvTranspose1d:
               what ChannelsLastVocoder runs
  triton T     vocoder_conv_transposed: a 2-tap conv with r*C/2 columns (transposed_matrix), viewed as samples
  cudnn+snake  cudnn, then the first residual unit's SnakeBeta of its samples (snakebeta_cl with the transposed
               conv's bias, fast sine, into a dense buffer): the two passes the decoder runs without transposed_kernel
  triton T+snake   vocoder_conv_transposed with that SnakeBeta in its epilogue: the decoder's `transposed_kernel`

One table row per conv and side: ms, TFLOP/s (2*C_in*C_out*taps per output sample), the ratio to cudnn (the +snake
sides: to cudnn+snake), and the largest difference from cudnn's (cudnn+snake's) output relative to its largest
magnitude. Then the step's convs summed by side, and each conv's fastest tiles summed. A measurement tool: it
asserts nothing about speed.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_snakebeta import step_shapes  # noqa: E402 (sibling scripts: the step's shapes, a timer)
from bench_unit_tail import block_shapes, time_ms  # noqa: E402
from omni.kernels.channels_last import snakebeta_cl  # noqa: E402
from omni.kernels.tiles import Tiles  # noqa: E402
from omni.kernels.vocoder_conv import (  # noqa: E402
    conv_matrix,
    transposed_matrix,
    vocoder_conv,
    vocoder_conv_transposed,
)

from omni.models.qwen3_tts.codec import CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER  # noqa: E402

DILATIONS = (1, 3, 9)  # a VocoderBlock's residual units
TAPS = 7


def conv_inputs(rows: int, channels: int, length: int, dilation: int, dtype, device: str, seed: int) -> dict:
    """conv1's [history ‖ new] input buffer ([B, C, T_in] with [B, T_in, C] memory) and its weight in each layout."""
    gen = torch.Generator(device=device).manual_seed(seed)
    length_in = length + (TAPS - 1) * dilation
    x = (torch.randn(rows, length_in, channels, generator=gen, device=device) * 2).to(dtype).transpose(1, 2)
    weight = (torch.randn(channels, channels, TAPS, generator=gen, device=device) * channels**-0.5).to(dtype)
    bias, alpha, beta = (torch.randn(channels, generator=gen, device=device) * 0.5 for _ in range(3))
    return {
        "x": x,
        "bias": bias,
        "snake": (alpha, beta),
        "dilation": dilation,
        "w_1t": weight.unsqueeze(2).contiguous(memory_format=torch.channels_last),
        "w_t1": weight.unsqueeze(3).contiguous(memory_format=torch.channels_last),
        "w": conv_matrix(weight),
    }


def cudnn(i: dict) -> torch.Tensor:
    return F.conv2d(i["x"].unsqueeze(2), i["w_1t"], dilation=(1, i["dilation"])).squeeze(2)


def cudnn_transposed(i: dict) -> torch.Tensor:
    return F.conv2d(i["x"].unsqueeze(3), i["w_t1"], dilation=(i["dilation"], 1)).squeeze(3)


def cudnn_snake(i: dict) -> torch.Tensor:
    return snakebeta_cl(cudnn(i), *i["snake"], bias=i["bias"], fast_sin=True)


def triton_snake(i: dict, tiles: Tiles, flat: bool | None = None) -> torch.Tensor:
    return vocoder_conv(i["x"], i["w"], i["dilation"], i["bias"], tiles, snake=i["snake"], fast_sin=True, flat=flat)


def triton_sides(i: dict, tiles: list[Tiles], snake: bool, both_tilings: bool) -> dict:
    """conv1's Triton sides by tiles (with its SnakeBeta if `snake`): the decoder's tiling, and with `both_tilings`
    M tiles forced across batch rows ("flat") and within each row ("rows")."""
    tilings = {"": None, " flat": True, " rows": False} if both_tilings else {"": None}
    suffix = "+snake" if snake else ""
    sides = {}
    for t in tiles:
        for label, flat in tilings.items():
            if snake:
                sides[f"triton {t}{label}{suffix}"] = lambda t=t, flat=flat: triton_snake(i, t, flat)
            else:
                sides[f"triton {t}{label}"] = lambda t=t, flat=flat: vocoder_conv(
                    i["x"], i["w"], i["dilation"], tiles=t, flat=flat
                )
    return sides


def transposed_inputs(rows: int, in_channels: int, rate: int, length: int, dtype, device: str, seed: int) -> dict:
    """A vocoder block's transposed conv input buffer ([B, C, 1 + T] with [B, 1 + T, C] memory: one carried sample)
    and its weight [C, C/2, 2r] as the decoder's conv_transpose2d takes it and as transposed_matrix."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = (torch.randn(rows, length + 1, in_channels, generator=gen, device=device) * 2).to(dtype).transpose(1, 2)
    weight = torch.randn(in_channels, in_channels // 2, 2 * rate, generator=gen, device=device) * in_channels**-0.5
    weight = weight.to(dtype)
    bias, alpha, beta = (torch.randn(in_channels // 2, generator=gen, device=device) * 0.5 for _ in range(3))
    return {
        "x": x,
        "rate": rate,
        "bias": bias,
        "snake": (alpha, beta),
        "out": torch.empty(rows, length * rate, in_channels // 2, dtype=dtype, device=device).transpose(1, 2),
        "w_cl": weight.unsqueeze(2).contiguous(memory_format=torch.channels_last),
        "w": transposed_matrix(weight, rate),
    }


def cudnn_upsample(i: dict) -> torch.Tensor:
    r = i["rate"]
    y = F.conv_transpose2d(i["x"].unsqueeze(2), i["w_cl"], stride=(1, r)).squeeze(2)
    return y[..., r : r * i["x"].shape[-1]]


def cudnn_upsample_snake(i: dict) -> torch.Tensor:
    return snakebeta_cl(cudnn_upsample(i), *i["snake"], out=i["out"], bias=i["bias"], fast_sin=True)


def triton_upsample(i: dict, tiles: Tiles) -> torch.Tensor:
    return vocoder_conv_transposed(i["x"], i["w"], i["rate"], tiles)


def triton_upsample_snake(i: dict, tiles: Tiles) -> torch.Tensor:
    """The first unit's SnakeBeta the epilogue wrote (the samples it returns are the plain side's)."""
    vocoder_conv_transposed(i["x"], i["w"], i["rate"], tiles, i["snake"], i["bias"], i["out"], fast_sin=True)
    return i["out"]


def time_sides(sides: dict, want: dict, fields: dict, flop: float, args, rows: list, step: dict) -> None:
    """Time each side (name -> fn; names ending in +snake compare with want["+snake"], the rest with want[""]),
    print its table row and add it to `rows` (with `fields`) and its time to `step`; a side that raises (tiles the
    GPU cannot run: shared memory, BLOCK_K) is an error row."""
    scale = {key: float(out.float().abs().max()) for key, out in want.items()}
    label = f"{fields['channels']:>5} {fields['length']:>6} {fields['dilation']:>3}"
    base_ms = {}
    for name, fn in sides.items():
        key = "+snake" if name.endswith("+snake") else ""
        try:
            got = fn()
        except Exception as exc:  # noqa: BLE001 - a tile size the GPU cannot run: say so, go on
            print(f"{label} {name:<30} error: {exc!r}"[:300], flush=True)
            rows.append(fields | {"side": name, "error": repr(exc)})
            continue
        diff = float((got.float() - want[key].float()).abs().max()) / scale[key]
        ms = time_ms(fn, args.device, args.iters, args.repeats)
        base_ms.setdefault(key, ms)
        row = fields | {
            "side": name,
            "ms": round(ms, 4),
            "tflop_per_s": round(flop / ms / 1e9, 1),
            "vs_cudnn": round(ms / base_ms[key], 3),
            "rel_diff": diff,
        }
        rows.append(row)
        step[name] = step.get(name, 0.0) + ms
        print(
            f"{label} {name:<30} {ms:>8.4f} {row['tflop_per_s']:>8.1f} {row['vs_cudnn']:>8.3f} {diff:>9.2e}", flush=True
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--rows", type=int, default=128, help="streams in the step")
    parser.add_argument("--frames", type=int, default=15, help="new codec frames per stream")
    parser.add_argument("--tiles", nargs="+", default=[str(Tiles())], help="BMxBNxBKwWARPSsSTAGES each")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="tiny widths (CPU smoke test)")
    parser.add_argument("--transposed", action="store_true", help="the blocks' transposed convs, not the conv1s")
    parser.add_argument(
        "--both-tilings", action="store_true", help="conv1's Triton sides also with M tiles forced flat and within rows"
    )
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args()
    if args.both_tilings and args.transposed:
        parser.error("--both-tilings times the conv1s (vocoder_conv's `flat`); drop --transposed")
    if args.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("--device cpu needs TRITON_INTERPRET=1 (the Triton kernel runs in the interpreter)")
    tiles = [Tiles.parse(t) for t in args.tiles]
    dtype = getattr(torch, args.dtype)
    cfg = CodecDecoderConfig(**TINY_DECODER) if args.tiny else CodecDecoderConfig()
    torch.backends.cudnn.benchmark = True  # as the codec service runs
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rows, step = [], {}
    print(f"{'C':>5} {'T':>6} {'dil':>3} {'side':<30} {'ms':>8} {'TFLOP/s':>8} {'vs cudnn':>8} {'rel diff':>9}")
    if args.transposed:  # the blocks' upsamplers: (C_in, T_in) -> (C_in/2, T_in*r)
        shapes = step_shapes(cfg, args.frames)
        for k, ((channels, length, _), (_, samples, _)) in enumerate(zip(shapes, shapes[1:], strict=False)):
            rate = samples // length
            inputs = transposed_inputs(args.rows, channels, rate, length, dtype, args.device, seed=k)
            flop = 2 * 2 * channels * (channels // 2) * args.rows * samples
            sides = {"cudnn": lambda i=inputs: cudnn_upsample(i)}
            for t in tiles:
                sides[f"triton {t}"] = lambda i=inputs, t=t: triton_upsample(i, t)
            sides["cudnn+snake"] = lambda i=inputs: cudnn_upsample_snake(i)
            for t in tiles:
                sides[f"triton {t}+snake"] = lambda i=inputs, t=t: triton_upsample_snake(i, t)
            fields = {"conv": "transposed", "channels": channels, "length": length, "dilation": rate}
            want = {"": cudnn_upsample(inputs), "+snake": cudnn_upsample_snake(inputs).clone()}
            time_sides(sides, want, fields, flop, args, rows, step)
            del inputs
    else:  # the residual units' conv1s
        for k, (channels, length) in enumerate(block_shapes(cfg, args.frames)):
            for dilation in DILATIONS:
                inputs = conv_inputs(args.rows, channels, length, dilation, dtype, args.device, seed=k * 10 + dilation)
                flop = 2 * channels * channels * TAPS * args.rows * length
                want = {"": cudnn(inputs), "+snake": cudnn_snake(inputs)}
                sides = {"cudnn": lambda i=inputs: cudnn(i), "cudnn-t": lambda i=inputs: cudnn_transposed(i)}
                sides |= triton_sides(inputs, tiles, snake=False, both_tilings=args.both_tilings)
                sides["cudnn+snake"] = lambda i=inputs: cudnn_snake(i)
                sides |= triton_sides(inputs, tiles, snake=True, both_tilings=args.both_tilings)
                fields = {"conv": "conv1", "channels": channels, "length": length, "dilation": dilation}
                time_sides(sides, want, fields, flop, args, rows, step)
                del inputs
    convs = len(cfg.upsample_rates) if args.transposed else len(DILATIONS) * len(block_shapes(cfg, args.frames))
    print(f"\nthe step's {convs} {'transposed' if args.transposed else 'residual k=7'} convs, summed:")
    for name, ms in step.items():  # a side that failed on some conv sums fewer convs: marked
        base = "cudnn+snake" if name.endswith("+snake") else "cudnn"
        if sum(r["side"] == name and "ms" in r for r in rows) < convs:
            name += " (some convs failed)"
        print(f"  {name:<30} {ms:8.3f} ms  ({ms / step[base]:.3f} of {base})")
    # each conv's fastest Triton tiles, summed: what a per-shape tile table would give
    for key in ("", "+snake"):
        fastest: dict[tuple[int, int], float] = {}
        for r in rows:
            if "ms" in r and r["side"].startswith("triton") and r["side"].endswith("+snake") == (key == "+snake"):
                conv = (r["channels"], r["dilation"])
                fastest[conv] = min(fastest.get(conv, r["ms"]), r["ms"])
        best = sum(fastest.values()) if len(fastest) == convs else float("nan")
        base = "cudnn" + key
        print(f"  {'triton best tiles' + key:<30} {best:8.3f} ms  ({best / step[base]:.3f} of {base})")
    if args.out:
        env = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
        summary = {"env": env, "args": vars(args), "rows": rows, "step_ms": step}
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
