"""`omni serve`: the whole stack on this machine (talker, codec, reference encoder, gateway) on loopback ports.

Each service runs as its own `omni <service>` subprocess, exactly as in a cluster; the gateway finds the others
by their loopback addresses. Without `--model` a tiny random-weight checkpoint is built: every stage really
runs, but the audio is noise, not speech.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SERVICES = ("refenc", "codec", "talker")  # started first; the gateway last


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run talker, codec, refenc and gateway on this machine",
        description="Start the whole omni stack on loopback ports and print where to send requests.",
    )
    parser.add_argument("--model", default="", help="Qwen3-TTS checkpoint dir (default: a tiny random one: noise)")
    parser.add_argument("--tiny-variant", default="base", choices=("base", "custom_voice", "voice_design"))
    parser.add_argument("--host", default="127.0.0.1", help="address the gateway's HTTP and gRPC APIs bind to")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (0 picks a free one)")
    parser.add_argument("--grpc-port", type=int, default=8001, help="gRPC Speech port (0 picks a free one)")
    parser.add_argument("--redis-url", default="", help="Redis for the shared cache and voice registry")
    parser.add_argument("--device", default="cpu", help="torch device of talker, codec and refenc")
    for name in SERVICES:
        parser.add_argument(f"--{name}-device", default="", help=f"torch device of the {name} (default: --device)")
    parser.add_argument("--dtype", default="float32", help="model dtype (float32, bfloat16, float16)")
    parser.add_argument("--max-streams", type=int, default=32, help="talker slots (the codec gets twice as many)")
    parser.add_argument(
        "--codec-max-streams", type=int, default=0, help="codec streams (default 2 x --max-streams: queued requests)"
    )
    parser.add_argument("--gateway-workers", type=int, default=1, help="gateway processes sharing its ports")
    parser.add_argument("--work-dir", default="", help="where logs (and the tiny checkpoint) go (default: a temp dir)")
    parser.add_argument("--ready-timeout-s", type=float, default=300.0, help="give up if not ready by then")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(func=run)


def pin_gpu(device: str, env: dict[str, str]) -> tuple[str, dict[str, str] | None]:
    """A backend on `cuda:N` runs with only that GPU visible, as `cuda` (as in a pod): CUDA graphs and streams are
    then made on the current device, which is the service's own. Returns (device flag, env or None to inherit)."""
    kind, _, index = device.partition(":")
    if kind != "cuda" or not index:
        return device, None
    visible = env.get("CUDA_VISIBLE_DEVICES", "").strip()
    ids = [v.strip() for v in visible.split(",")] if visible else None
    if ids is not None and not int(index) < len(ids):
        raise ValueError(f"{device}: CUDA_VISIBLE_DEVICES={visible!r} has only {len(ids)} GPU(s)")
    return "cuda", {**env, "CUDA_VISIBLE_DEVICES": ids[int(index)] if ids is not None else index}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """The four subprocesses; `stop()` ends them with SIGTERM (SIGKILL after a timeout)."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.work_dir / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "omni.cli", name, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # our signal handler decides the shutdown order
        )

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.work_dir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"omni {name} exited with code {process.returncode}; its log ends:\n{tail}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """The gateway first (no new requests reach the backends), then the backends together."""
        gateway = {k: p for k, p in self.processes.items() if k == "gateway"}
        backends = {k: p for k, p in self.processes.items() if k != "gateway"}
        for group in (gateway, backends):
            for process in group.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in group.values():
                try:
                    process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def wait_until(stack: Stack, ready: Callable[[], bool], what: str, deadline: float) -> None:
    """Poll `ready()` every 0.2 s until it is true; fail at once if a process of the stack died, or at `deadline`."""
    while True:
        stack.check_alive()
        if ready():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not become ready in time")
        time.sleep(0.2)


def wait_grpc_serving(stack: Stack, address: str, deadline: float) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)

        def serving() -> bool:
            try:
                status = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0).status
            except grpc.RpcError:
                return False
            return status == health_pb2.HealthCheckResponse.SERVING

        wait_until(stack, serving, address, deadline)


def wait_http_ready(stack: Stack, url: str, deadline: float) -> None:
    import httpx

    def ready() -> bool:
        try:
            return httpx.get(url, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(stack, ready, url, deadline)


def run(args: argparse.Namespace) -> int:
    work_dir = Path(args.work_dir or tempfile.mkdtemp(prefix="omni-serve-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    model = args.model
    if not model:
        from omni.models.qwen3_tts.tiny import write_tiny_checkpoint

        model = str(work_dir / f"tiny-{args.tiny_variant}")
        if not (Path(model) / "config.json").exists():
            write_tiny_checkpoint(Path(model), args.tiny_variant, seed=0)
        print(
            f"NOTE: no --model given; serving a tiny RANDOM-WEIGHT {args.tiny_variant} checkpoint ({model}). "
            "It will produce noise, not speech.",
            flush=True,
        )
    http_port = args.port or free_port()
    grpc_port = args.grpc_port or free_port()
    ports = {name: free_port() for name in SERVICES}
    common = ["--model", model, "--host", "127.0.0.1", "--log-level", args.log_level]
    devices = {name: getattr(args, f"{name}_device") or args.device for name in SERVICES}
    try:
        pinned = {name: pin_gpu(devices[name], dict(os.environ)) for name in SERVICES}
    except ValueError as e:
        print(f"omni serve: {e}", file=sys.stderr)
        return 2
    device = {name: ["--device", pinned[name][0], "--dtype", args.dtype] for name in SERVICES}
    envs = {name: pinned[name][1] for name in SERVICES}

    stack = Stack(work_dir)
    stopping = False

    def on_signal(signum, frame) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        refenc_args = [*common, *device["refenc"], "--port", str(ports["refenc"]), "--redis-url", args.redis_url]
        stack.start("refenc", refenc_args, envs["refenc"])
        codec_streams = str(args.codec_max_streams or 2 * args.max_streams)
        codec_args = [*common, *device["codec"], "--port", str(ports["codec"]), "--max-streams", codec_streams]
        stack.start("codec", codec_args, envs["codec"])
        talker_streams = str(args.max_streams)
        talker_args = [*common, *device["talker"], "--port", str(ports["talker"]), "--max-streams", talker_streams]
        stack.start("talker", talker_args, envs["talker"])
        stack.start(
            "gateway",
            [
                "--model", model, "--host", args.host, "--port", str(http_port), "--grpc-port", str(grpc_port),
                "--log-level", args.log_level, "--workers", str(args.gateway_workers),
                "--talkers", f"127.0.0.1:{ports['talker']}",
                "--codecs", f"127.0.0.1:{ports['codec']}",
                "--refencs", f"127.0.0.1:{ports['refenc']}",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + args.ready_timeout_s
        for name in SERVICES:
            wait_grpc_serving(stack, f"127.0.0.1:{ports[name]}", deadline)
        host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
        wait_http_ready(stack, f"http://{host}:{http_port}/ready", deadline)
        print(f"omni is ready (logs in {work_dir}):", flush=True)
        print(f"  OpenAI-compatible HTTP API: http://{host}:{http_port}/v1  (POST /v1/audio/speech)", flush=True)
        print(f"  gRPC Speech service:        {host}:{grpc_port}", flush=True)
        print(f"  metrics:                    http://{host}:{http_port}/metrics", flush=True)
        workers = f", {args.gateway_workers} worker processes" if args.gateway_workers > 1 else ""
        print(f"  gateway:                    pid {stack.processes['gateway'].pid}{workers}", flush=True)
        for name in SERVICES:
            pid = stack.processes[name].pid
            print(f"  {name + ' service:':<28}127.0.0.1:{ports[name]} (pid {pid}) on {devices[name]}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        while True:
            stack.check_alive()
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("omni serve: shutting down", flush=True)
        return 0
    except (RuntimeError, TimeoutError) as e:
        print(f"omni serve: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stack.stop()
