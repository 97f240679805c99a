"""`omni encode`: reference audio -> codec codes (int64 [frames, 16] .npy), as used for voice cloning."""

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "encode",
        help="encode audio into 12 Hz codec codes (.npy, int64 [frames, 16])",
        description="Encode a WAV/FLAC/OGG/MP3 file (1-30 s; down-mixed to mono, resampled to 24 kHz) with the "
        "model's speech tokenizer encoder.",
    )
    parser.add_argument("--model", required=True, help="model folder or its speech_tokenizer/ folder")
    parser.add_argument("--audio", required=True, help="input audio file")
    parser.add_argument("--out", required=True, help="output .npy file")
    parser.add_argument("--device", default="cpu")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import numpy as np

    from omni.audio import AudioError, prepare_reference_audio
    from omni.models.qwen3_tts.codec_encoder import CodecEncoder

    try:
        wav = prepare_reference_audio(Path(args.audio).read_bytes())
    except (OSError, AudioError) as e:
        raise SystemExit(f"omni encode: {args.audio}: {e}") from None
    encoder = CodecEncoder.from_pretrained(args.model, device=args.device)
    codes = encoder.encode(wav).cpu().numpy().astype(np.int64)
    np.save(args.out, codes)
    print(f"wrote {codes.shape[0]} frames x {codes.shape[1]} codes to {args.out}")
    return 0
