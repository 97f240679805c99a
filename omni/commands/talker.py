"""`omni talker`: run the talker service (prompt ids in, a stream of codec-frame chunks out)."""

import argparse


def register(subparsers) -> None:
    from omni.services.common.config import add_config_flags
    from omni.services.talker.config import TalkerConfig

    parser = subparsers.add_parser(
        "talker",
        help="run the talker gRPC service",
        description="Talker service: continuous-batching generation of codec frames, streamed in chunks.",
    )
    add_config_flags(parser, TalkerConfig)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from omni.services.common.config import load_config
    from omni.services.common.logging import setup_logging
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import serve

    config = load_config(TalkerConfig, "talker", args)
    setup_logging(config.log_level)
    if not config.model:
        raise SystemExit("omni talker: --model DIR is required (a Qwen3-TTS checkpoint directory)")
    from omni.device_memory import NotEnoughMemory

    try:
        asyncio.run(serve(config))
    except NotEnoughMemory as error:  # a one-line refusal with the sizes and settings, not torch's traceback
        raise SystemExit(f"omni talker: {error}") from None
    return 0
