"""`omni codec`: run the codec service (streaming decode of codec chunks into PCM)."""

import argparse


def register(subparsers) -> None:
    from omni.services.codec.config import CodecConfig
    from omni.services.common.config import add_config_flags

    parser = subparsers.add_parser(
        "codec",
        help="run the codec gRPC service",
        description="Codec service: streaming decode of codec chunks into 24 kHz PCM for many streams.",
    )
    add_config_flags(parser, CodecConfig)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from omni.services.codec.config import CodecConfig
    from omni.services.codec.service import serve
    from omni.services.common.config import load_config
    from omni.services.common.logging import setup_logging

    config = load_config(CodecConfig, "codec", args)
    setup_logging(config.log_level)
    if not config.model:
        raise SystemExit("omni codec: --model DIR is required (a Qwen3-TTS checkpoint directory)")
    asyncio.run(serve(config))
    return 0
