"""`omni decode`: codec codes (.npy, int64 [frames, 16]) -> 24 kHz WAV, whole or through the streaming decoder."""

import argparse


def parse_chunks(text: str) -> list[int]:
    """ "1,15" -> [1, 15]: chunk sizes in frames; the last one repeats until the codes run out."""
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--chunks must be comma-separated frame counts, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"--chunks sizes must be >= 1, got {text!r}")
    return sizes


def chunk_bounds(frames: int, sizes: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each chunk of a `frames`-long sequence cut by `sizes` (last size repeated)."""
    bounds, start, i = [], 0, 0
    while start < frames:
        end = min(frames, start + sizes[min(i, len(sizes) - 1)])
        bounds.append((start, end))
        start, i = end, i + 1
    return bounds


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "decode",
        help="decode 12 Hz codec codes (.npy) into a 24 kHz WAV",
        description="Decode codes with the model's speech tokenizer decoder. With --chunks the codes go through "
        "the streaming decoder chunk by chunk (same samples as the whole decode).",
    )
    parser.add_argument("--model", required=True, help="model folder or its speech_tokenizer/ folder")
    parser.add_argument("--codes", required=True, help="input .npy, int [frames, 16]")
    parser.add_argument("--out", required=True, help="output .wav (32-bit float)")
    parser.add_argument("--chunks", type=parse_chunks, default=None, help="stream in chunks, e.g. 1,15")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--device", default="cpu")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from omni.audio import write_wav
    from omni.models.qwen3_tts.codec import SAMPLE_RATE, load_codec_decoder

    try:
        codes = np.load(args.codes, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise SystemExit(f"omni decode: cannot read {args.codes}: {e}") from None
    if codes.ndim != 2 or codes.shape[1] != 16 or not np.issubdtype(codes.dtype, np.integer):
        raise SystemExit(
            f"omni decode: {args.codes} must hold integer codes [frames, 16], got {codes.dtype} {codes.shape}"
        )
    decoder = load_codec_decoder(args.model, dtype=getattr(torch, args.dtype), device=args.device)
    codes_t = torch.from_numpy(codes.astype(np.int64)).to(args.device)
    try:
        if args.chunks is None:
            wav = decoder.decode(codes_t[None])[0]
        else:
            state = decoder.new_state(1)
            pieces = [
                decoder.decode_streams(state, [0], [codes_t[a:b]])[0]
                for a, b in chunk_bounds(len(codes_t), args.chunks)
            ]
            wav = torch.cat(pieces) if pieces else torch.zeros(0)
    except ValueError as e:
        raise SystemExit(f"omni decode: {e}") from None
    write_wav(args.out, wav.float().cpu().numpy(), SAMPLE_RATE, subtype="FLOAT")
    print(f"wrote {wav.numel() / SAMPLE_RATE:.2f} s ({codes.shape[0]} frames) to {args.out}")
    return 0
