"""`omni gateway`: the OpenAI-compatible HTTP API and the gRPC Speech service over talker, codec and refenc replicas."""

import argparse
import dataclasses

from omni.services.common.config import option
from omni.services.gateway.config import GatewaySettings


@dataclasses.dataclass
class GatewayServeSettings(GatewaySettings):
    model: str = option("", "checkpoint directory (config and tokenizer; the talker must run the same checkpoint)")
    model_name: str = option("", "model id clients use (default: the checkpoint directory's name)")
    talkers: list[str] = option([], "talker addresses host:port (a DNS name may resolve to several replicas)")
    codecs: list[str] = option([], "codec addresses host:port")
    refencs: list[str] = option([], "reference-encoder addresses host:port")
    grpc_port: int = option(-1, "port of the public gRPC Speech service (-1 disables it, 0 picks a free one)")
    poll_s: float = option(0.5, "how often replica addresses and loads are refreshed, seconds")
    down_s: float = option(2.0, "how long a failed replica is skipped before it is polled again, seconds")
    replica_wait_s: float = option(
        3.0, "a request that finds no usable replica of a service waits this long for the polls to find one, seconds"
    )


def register(subparsers) -> None:
    from omni.services.common.config import add_config_flags

    parser = subparsers.add_parser(
        "gateway",
        help="run the gateway (OpenAI-compatible HTTP API + gRPC Speech service)",
        description="Gateway: /v1/audio/speech and the gRPC Speech service, routed to talker, codec and refenc.",
    )
    add_config_flags(parser, GatewayServeSettings)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from omni.services.common.config import load_config
    from omni.services.common.logging import setup_logging

    settings = load_config(GatewayServeSettings, "gateway", args)
    setup_logging(settings.log_level)
    if not settings.model:
        raise SystemExit("omni gateway: --model DIR is required (the checkpoint the talkers run)")
    if not settings.talkers or not settings.codecs:
        raise SystemExit("omni gateway: --talkers and --codecs are required (host:port, comma-separated)")
    if settings.workers < 1:
        raise SystemExit(f"omni gateway: --workers must be at least 1, got {settings.workers}")
    if settings.workers > 1:
        from omni.services.gateway.workers import run_workers

        return run_workers(serve, settings)
    asyncio.run(serve(settings))
    return 0


async def serve(settings: GatewayServeSettings, worker: int | None = None) -> None:
    """Run the HTTP server and the gRPC Speech service until SIGTERM/SIGINT. `worker` is this process's index when
    it is one of several gateway processes sharing the ports (`services/gateway/workers.py`)."""
    import asyncio
    import logging
    import os
    import signal

    import uvicorn

    from omni.proto import speech_pb2_grpc
    from omni.services.common.gc_pauses import GcPauses
    from omni.services.common.loop_lag import LoopLag
    from omni.services.common.server import DEFAULT_OPTIONS, SHARED_PORT_OPTIONS, GrpcService
    from omni.services.gateway.app import create_app
    from omni.services.gateway.config import gateway_config
    from omni.services.gateway.grpc_backend import GrpcBackend
    from omni.services.gateway.speech_service import SERVICE_NAME, SpeechServicer
    from omni.services.gateway.workers import WorkerHeader, reuseport_socket

    log = logging.getLogger("omni.gateway")
    config = gateway_config(settings)
    backend = GrpcBackend(
        settings.model, settings.talkers, settings.codecs, settings.refencs, settings.model_name or None,
        poll_s=settings.poll_s, down_s=settings.down_s, replica_wait_s=settings.replica_wait_s,
    )  # fmt: skip
    await backend.start()
    app = create_app(backend, config)
    gc_pauses = GcPauses(app.state.metrics.gc_pause, unit_per_s=1.0)
    frozen = gc_pauses.freeze_and_start()  # torch, the tokenizer and the web stack stay out of later collections
    log.info("gateway: %d objects frozen out of garbage collection", frozen)
    loop_lag = LoopLag(app.state.metrics.loop_lag).start()
    sockets, grpc_options = None, DEFAULT_OPTIONS
    if worker is not None:  # own sockets on the shared ports: the kernel spreads connections over the workers
        app = WorkerHeader(app)
        sockets = [reuseport_socket(settings.host, settings.port)]
        grpc_options = SHARED_PORT_OPTIONS
    http = uvicorn.Server(
        uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level,
            access_log=False,
            lifespan="off",
            timeout_keep_alive=settings.http_keep_alive_s,
        )
    )
    http.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # we handle signals below
    speech = None
    if settings.grpc_port >= 0:
        speech = GrpcService("speech", f"{settings.host}:{settings.grpc_port}", options=grpc_options)
        speech.add(speech_pb2_grpc.add_SpeechServiceServicer_to_server, SpeechServicer(backend, config), SERVICE_NAME)
        port = await speech.start()
        await speech.set_serving()
        log.info("gRPC Speech service on port %d", port)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: setattr(http, "should_exit", True))
    if worker is not None:
        log.info("gateway worker %d (pid %d) serving HTTP port %d", worker, os.getpid(), settings.port)
    try:
        await http.serve(sockets=sockets)
    finally:
        gc_pauses.stop()
        await loop_lag.stop()
        if speech is not None:
            await speech.stop(grace_s=2.0)
        await backend.close()
