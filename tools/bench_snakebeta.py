"""The channels-last SnakeBeta kernel alone, at every shape one codec step runs it on (one GPU).

    python tools/bench_snakebeta.py --batch 128 --frames 15 --out snakebeta.json

One 128x15 step of the released decoder runs SnakeBeta 29 times (the vocoder's input to each of its 4 blocks, two in
each of a block's 3 residual units, and one before the output conv), from 1536 channels x 60 samples to 96 channels
x 28,800 per stream. For each variant (`libdevice` sinf or `sin.approx`, the default channel tile or one that
divides C) this times every shape with CUDA events and prints the step's total, the bandwidth it reached (one bf16
read and one write per element) and its error against the fp32 PyTorch definition, in two input sets: `speech`
(alpha, beta ~ N(0, 0.5): the checkpoint generator's scales) and `wide` (alpha up to e^3, so sin's argument reaches
the hundreds, where sin.approx is least accurate). Every conv's bias is folded in, as the service runs it; outputs are
dense (the service writes some into a [history | new] buffer's tail: same bytes).
"""

import argparse
import functools
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
try:
    import omni.kernels  # noqa: F401  (installed: setuptools maps kernels/ to omni.kernels)
except ModuleNotFoundError:  # a bare checkout (the GPU machine): map it by hand
    import kernels

    sys.modules["omni.kernels"] = kernels

from omni.kernels.channels_last import snakebeta_cl  # noqa: E402
from omni.kernels.snakebeta import snakebeta_reference  # noqa: E402

from omni.models.qwen3_tts.codec import CodecDecoderConfig  # noqa: E402

RESIDUAL_UNITS = 3  # VocoderBlock: dilations 1, 3, 9, each unit SnakeBeta -> conv k7 -> SnakeBeta -> conv k1
VARIANTS = {  # name: (fast_sin, block_c rule)
    "sinf": (False, None),
    "sin.approx": (True, None),
    "sinf, C-dividing tile": (False, "divide"),
    "sin.approx, C-dividing tile": (True, "divide"),
}


def step_shapes(cfg: CodecDecoderConfig, frames: int) -> list[tuple[int, int, int]]:
    """(channels, samples per stream, launches) of each SnakeBeta shape in one step of `frames` new frames."""
    channels, samples = cfg.decoder_dim, frames * math.prod(cfg.upsampling_ratios)
    shapes = [(channels, samples, 1)]  # the first block's input
    for rate in cfg.upsample_rates:
        channels, samples = channels // 2, samples * rate
        # the block's residual units, and at the same shape the next block's input (or the output conv's)
        shapes.append((channels, samples, 2 * RESIDUAL_UNITS + 1))
    return shapes


def dividing_block_c(channels: int) -> int:
    """The largest power of two up to 128 that divides C, so no program has masked-off channels (96 -> 32)."""
    block = 128
    while channels % block:
        block //= 2
    return block


def inputs(batch: int, channels: int, samples: int, spread: str, seed: int) -> tuple:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(batch, samples, channels, device="cuda", generator=gen) * 3).bfloat16().transpose(1, 2)
    if spread == "speech":
        alpha = torch.randn(channels, device="cuda", generator=gen) * 0.5
    else:
        alpha = torch.rand(channels, device="cuda", generator=gen) * 3.0
    beta = torch.randn(channels, device="cuda", generator=gen) * 0.5
    bias = torch.randn(channels, device="cuda", generator=gen) * 0.1
    return x, alpha, beta, bias


def time_ms(fn, iters: int) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def run(batch: int, frames: int, iters: int) -> dict:
    shapes = step_shapes(CodecDecoderConfig(), frames)
    result = {"batch": batch, "frames": frames, "shapes": shapes, "variants": {}}
    for name, (fast, tile_rule) in VARIANTS.items():
        total_ms, total_bytes, worst = 0.0, 0, {"speech": 0.0, "wide": 0.0}
        per_shape = []
        for channels, samples, launches in shapes:
            block_c = dividing_block_c(channels) if tile_rule == "divide" else None
            x, alpha, beta, bias = inputs(batch, channels, samples, "speech", seed=channels)
            out = torch.empty_like(x)
            step = functools.partial(snakebeta_cl, x, alpha, beta, out=out, bias=bias, fast_sin=fast, block_c=block_c)
            ms = time_ms(step, iters)
            total_ms += ms * launches
            total_bytes += 2 * x.numel() * x.element_size() * launches
            per_shape.append({"channels": channels, "samples": samples, "launches": launches, "ms": ms})
            for spread in ("speech", "wide"):
                x, alpha, beta, bias = inputs(batch, channels, samples, spread, seed=channels + 1)
                got = snakebeta_cl(x, alpha, beta, bias=bias, fast_sin=fast, block_c=block_c).float()
                want = snakebeta_reference(x.float(), alpha, beta, bias)
                rel = ((got - want).abs() / want.abs().clamp(min=1e-3)).max()
                worst[spread] = max(worst[spread], float(rel))
                del got, want
            del x, out, step
            torch.cuda.empty_cache()
        result["variants"][name] = {
            "step_ms": total_ms,
            "tb_per_s": total_bytes / total_ms / 1e9,
            "max_rel_err_speech": worst["speech"],
            "max_rel_err_wide": worst["wide"],
            "shapes": per_shape,
        }
    return result


def print_table(result: dict) -> None:
    print(f"SnakeBeta in one {result['batch']}x{result['frames']} codec step ({len(result['shapes'])} shapes)")
    print(f"{'variant':<30} {'step ms':>8} {'TB/s':>6} {'max rel err speech':>19} {'wide':>9}")
    for name, v in result["variants"].items():
        print(
            f"{name:<30} {v['step_ms']:>8.2f} {v['tb_per_s']:>6.2f} {v['max_rel_err_speech']:>19.2e} "
            f"{v['max_rel_err_wide']:>9.2e}"
        )
    print("per shape (ms per launch):")
    names = list(result["variants"])
    for i, (c, t, n) in enumerate(result["shapes"]):
        times = " ".join(f"{result['variants'][k]['shapes'][i]['ms']:>8.3f}" for k in names)
        print(f"  C {c:>5} T {t:>6} x{n}: {times}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--frames", type=int, default=15)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_snakebeta needs a CUDA device")
    result = run(args.batch, args.frames, args.iters)
    result["device"] = torch.cuda.get_device_name()
    print_table(result)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
