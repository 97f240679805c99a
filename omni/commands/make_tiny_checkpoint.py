"""`omni make-tiny-checkpoint`: write a random-weight Qwen3-TTS model dir in the official layout (tiny or released
widths)."""

import argparse

VARIANTS = ("base", "custom_voice", "voice_design")
SHAPES = ("tiny", "0.6b", "1.7b")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "make-tiny-checkpoint",
        help="write a random-weight Qwen3-TTS checkpoint (official layout) for tests, demos and benchmarks",
        description="Write a random-weight Qwen3-TTS-12Hz model dir with real token ids, official key names, the "
        "real Qwen2 BPE tokenizer files and a speech_tokenizer/: tiny widths, or the released 0.6B / 1.7B "
        "architectures (--shape) for benchmarks without a download.",
    )
    parser.add_argument("--variant", required=True, choices=VARIANTS)
    parser.add_argument("--out", required=True, help="output directory (created; existing files are overwritten)")
    parser.add_argument("--shape", choices=SHAPES, default="tiny", help="widths: tiny or a released size")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument(
        "--dtype", choices=("float32", "bfloat16"), default=None, help="stored dtype (tiny: float32, else bfloat16)"
    )
    parser.add_argument("--device", default="cpu", help="where released-size weights are drawn (cuda is faster)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from omni.models.qwen3_tts.tiny import write_shaped_checkpoint

    dtype = getattr(torch, args.dtype or ("float32" if args.shape == "tiny" else "bfloat16"))
    out = write_shaped_checkpoint(args.out, args.variant, args.shape, seed=args.seed, dtype=dtype, device=args.device)
    print(f"wrote {args.shape} {args.variant} checkpoint to {out}")
    return 0
