"""`omni synth`: offline synthesis of one text to a WAV file (and optionally the codec codes).

It runs the same prompt builder, slot runner and sampler the talker service uses; the waveform comes from a
whole-utterance decode with the codec decoder. Base (voice clone) reads reference audio as the official
wrapper does (mono mix, float32, 24 kHz) and turns it into codes (codec encoder) and an x-vector.
"""

import argparse
import sys

from omni.talker.prompt import TASK_TYPES


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("synth", help="offline synthesis of one text to a WAV file")
    p.add_argument("--model", required=True, help="Qwen3-TTS model dir (official layout)")
    p.add_argument("--text", required=True, help="text to speak")
    p.add_argument("--out", required=True, help="output WAV path (24 kHz mono)")
    p.add_argument("--codes-out", help="also write the codes as int64 [frames, 16] .npy")
    p.add_argument("--task-type", choices=sorted(TASK_TYPES), help="default: the checkpoint's variant")
    p.add_argument("--speaker", help="CustomVoice speaker name")
    p.add_argument("--language", help="language name or 'auto' (default)")
    p.add_argument("--instructions", help="voice/style instruction (VoiceDesign; 1.7B CustomVoice)")
    p.add_argument("--ref-audio", help="Base: reference recording to clone")
    p.add_argument("--ref-text", help="Base: transcript of the reference recording (ICL)")
    p.add_argument("--x-vector-only", action="store_true", help="Base: clone from the speaker x-vector only")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--non-streaming-text",
        dest="non_streaming",
        action="store_true",
        default=None,
        help="whole text in the prompt (official default for CustomVoice and VoiceDesign)",
    )
    mode.add_argument(
        "--streaming-text",
        dest="non_streaming",
        action="store_false",
        help="text fed one token per frame (official default for Base)",
    )
    p.add_argument("--greedy", action="store_true", help="argmax decoding (the official do_sample=False)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--max-frames", type=int, help="at most this many 80 ms frames (default: generation_config)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import numpy as np
    import torch

    from omni.audio import prepare_reference_audio, write_wav
    from omni.talker.generate import SynthesisOptions, Synthesizer
    from omni.talker.prompt import SpeechRequest

    try:
        if args.max_frames is not None and args.max_frames < 1:
            raise ValueError(f"--max-frames must be >= 1, got {args.max_frames}")
        synth = Synthesizer(args.model, dtype=getattr(torch, args.dtype), device=args.device)
        ref_codes = x_vector = None
        if args.ref_audio:
            wav = prepare_reference_audio(Path(args.ref_audio).read_bytes())
            ref_codes, x_vector = synth.reference_voice(wav, with_codes=not args.x_vector_only)
        request = SpeechRequest(
            text=args.text,
            task_type=args.task_type,
            language=args.language,
            speaker=args.speaker,
            instructions=args.instructions,
            ref_text=args.ref_text,
            ref_codes=ref_codes,
            x_vector=x_vector,
            x_vector_only=args.x_vector_only,
            non_streaming_mode=args.non_streaming,
        )
        # The last drawn codebook-0 id never becomes a frame: N frames need N + 1 draws.
        max_new = None if args.max_frames is None else args.max_frames + 1
        options = SynthesisOptions(greedy=args.greedy, seed=args.seed, max_new_tokens=max_new)
        codes = synth.synthesize([request], [options])[0]
        if args.codes_out:
            np.save(args.codes_out, codes.astype(np.int64))
        audio = synth.decode(codes, ref_codes if not args.x_vector_only else None)
        write_wav(args.out, audio, 24000)
    except (ValueError, OSError) as e:
        print(f"omni synth: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {codes.shape[0]} frames, {audio.shape[0] / 24000:.2f} s")
    return 0
