"""`omni refenc`: run the reference-encoder service (reference audio -> codes + x-vector, voice registry)."""

import argparse


def register(subparsers) -> None:
    from omni.services.common.config import add_config_flags
    from omni.services.refenc.config import RefencConfig

    parser = subparsers.add_parser(
        "refenc",
        help="run the reference-encoder gRPC service",
        description="Reference encoder: voice-clone audio -> codec codes and x-vector, cached; the voice registry.",
    )
    add_config_flags(parser, RefencConfig)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from omni.services.common.config import load_config
    from omni.services.common.logging import setup_logging
    from omni.services.refenc.config import RefencConfig
    from omni.services.refenc.service import serve

    config = load_config(RefencConfig, "refenc", args)
    setup_logging(config.log_level)
    if not config.model:
        raise SystemExit("omni refenc: --model DIR is required (a Qwen3-TTS checkpoint directory)")
    asyncio.run(serve(config))
    return 0
