"""`omni make-tiny-checkpoint`: write a tiny random-weight Qwen3-TTS model dir in the official layout."""

import argparse

VARIANTS = ("base", "custom_voice", "voice_design")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "make-tiny-checkpoint",
        help="write a tiny random-weight Qwen3-TTS checkpoint (official layout) for tests and demos",
        description="Write a random-weight Qwen3-TTS-12Hz model dir with tiny widths, real token ids, official key "
        "names, the real Qwen2 BPE tokenizer files and a speech_tokenizer/.",
    )
    parser.add_argument("--variant", required=True, choices=VARIANTS)
    parser.add_argument("--out", required=True, help="output directory (created; existing files are overwritten)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="stored weight dtype")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from omni.models.qwen3_tts.tiny import write_tiny_checkpoint

    out = write_tiny_checkpoint(args.out, args.variant, seed=args.seed, dtype=getattr(torch, args.dtype))
    print(f"wrote tiny {args.variant} checkpoint to {out}")
    return 0
