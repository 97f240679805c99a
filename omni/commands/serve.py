"""`omni serve`: the whole stack on this machine (talker, codec, reference encoder, gateway) on loopback ports.

Each service runs as its own `omni <service>` subprocess, exactly as in a cluster; the gateway finds the others
by their loopback addresses. Without `--model` a tiny random-weight checkpoint is built: every stage really
runs, but the audio is noise, not speech. `--codec-replicas N` starts N codec processes on the codec's device, for
when one process's host work is the codec's limit (their kernels share the GPU by time-slicing; 2 on the codec's own
H200 measured +9.5% at 512 streams once, docs/benchmarks.md run 36); `--codec-devices cuda:1,cuda:0` starts one on
each listed device instead (a second codec on the talker's GPU measured worse, run 34). The gateway spreads streams
over them, least loaded first. `--mps` runs the services under an MPS daemon of its own, so processes sharing a
GPU run their kernels side by side, and a talker sharing its GPU with a codec then queues its steps ahead (one H100:
+27 / +13 / +13% audio-s/s at 16 / 128 / 512 streams, docs/benchmarks.md run 216).
"""

import argparse
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from omni import mps

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
    parser.add_argument(
        "--codec-replicas",
        type=positive_int,
        default=1,
        help="codec processes on the codec device, the codec streams split over them (ceil)",
    )
    parser.add_argument(
        "--codec-devices",
        default="",
        help="comma-separated devices, one codec process on each (instead of --codec-replicas on --codec-device)",
    )
    parser.add_argument("--gateway-workers", type=int, default=1, help="gateway processes sharing its ports")
    parser.add_argument(
        "--mps",
        action="store_true",
        help="start an NVIDIA MPS daemon for the services (quit at shutdown): processes on one GPU run their kernels "
        "side by side, and a talker sharing its GPU with a codec queues its steps ahead",
    )
    parser.add_argument("--work-dir", default="", help="where logs (and the tiny checkpoint) go (default: a temp dir)")
    parser.add_argument("--ready-timeout-s", type=float, default=300.0, help="give up if not ready by then")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(func=run)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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


def device_list(text: str) -> list[str]:
    """`--codec-devices`' comma-separated devices, blanks dropped."""
    return [d.strip() for d in text.split(",") if d.strip()]


def gpu(device: str) -> tuple[str, str]:
    """A device's kind and index ("cuda" -> ("cuda", "0")): two devices are one GPU when these are equal."""
    kind, _, index = device.partition(":")
    return kind, index or "0"


def talker_gpu_alone(talker: str, codecs: list[str]) -> bool:
    """Whether the talker is on a GPU that no codec process shares. Then its engine queues each step before reading
    the previous one back (async scheduling, measured +18% at 256 streams on two H200s); on a shared GPU that only
    takes GPU time from the codec (no gain on one H200, and the codec's chunks waited longer)."""
    return gpu(talker)[0] == "cuda" and all(gpu(talker) != gpu(codec) for codec in codecs)


def talker_queues_ahead(talker: str, codecs: list[str], under_mps: bool) -> bool:
    """Whether the talker queues each step before reading the previous one back (async scheduling): alone on its
    GPU, or sharing it with a codec under MPS, where the codec's kernels run beside its steps (one H100: +27 / +13 /
    +13% audio-s/s at 16 / 128 / 512 streams, TTFA p50 at 16 streams 50 -> 46 ms; run 216). Time-slicing a shared GPU
    instead, its queued steps held the codec's ticks back (runs 111 and 213)."""
    return talker_gpu_alone(talker, codecs) or (under_mps and gpu(talker)[0] == "cuda")


def mps_hint(talker: str, codecs: list[str], under_mps: bool, mps_control: bool) -> str | None:
    """A line for the operator when talker and codec time-slice one GPU where `--mps` could run them side by side
    (the MPS control program is on PATH): under MPS the one-GPU stack gave +10 to +28% audio-s/s on H100s, both
    models, 16-800 streams (runs 216, 220, 221). None where it does not apply."""
    if under_mps or not mps_control or gpu(talker)[0] != "cuda" or talker_gpu_alone(talker, codecs):
        return None
    return (
        "hint: talker and codec time-slice one GPU; `omni serve --mps` runs their kernels side by side under NVIDIA "
        "MPS (+10 to +28% audio-s/s on one H100, docs/benchmarks.md runs 216 and 220)"
    )


def free_port() -> int:
    return free_ports(1)[0]


# Ports handed out below are bound later by another process. Until then any socket bound to port 0 and any outgoing
# connection on the machine may be given the same port if it lies in the kernel's ephemeral range (a test's metrics
# port was, once, in CI), so they are drawn at random from below that range, where only explicit binds go.
PORT_FLOOR = 10000
# Every port this process has handed out. A port handed out is free until its new owner binds it, so a later draw
# could hand it out again: `omni serve` gave its codec the gateway's gRPC port that way (run 245, session 69; most
# likely also the chart test's refenc in CI, session 68). A process never hands out the same port twice. (Two
# processes drawing at once can still meet: 1 in ~20,000 a pair of draws.)
HANDED_OUT: set[int] = set()


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for port-0 binds and outgoing connections (Linux; the usual default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports free just now and never handed out before by this process, drawn at random
    below the ephemeral range; from the ephemeral range if it leaves too little below it."""
    low = ephemeral_ports()[0]
    below = low - PORT_FLOOR >= 1000
    sockets: list[socket.socket] = []
    try:
        for _ in range(count + 1000):
            port = random.randrange(PORT_FLOOR, low) if below else 0
            if port in HANDED_OUT:  # not even bound for a moment: its new owner may be binding it now
                continue
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            if s.getsockname()[1] in HANDED_OUT:  # the kernel's own choice (port 0) repeated one
                s.close()
                continue
            sockets.append(s)  # held open, so this call's draws are distinct
            if len(sockets) == count:
                ports = [s.getsockname()[1] for s in sockets]
                HANDED_OUT.update(ports)
                return ports
        raise OSError(f"no {count} free loopback ports")
    finally:
        for s in sockets:
            s.close()


def codec_metrics_ports(env_value: str | None, replicas: int) -> list[int | None]:
    """Each codec replica's /metrics port, given as its `--metrics-port`; None leaves the codec's own setting.

    One replica keeps today's behaviour: `OMNI_CODEC_METRICS_PORT` (inherited) decides. Several replicas would all
    bind that one port, so each gets its own: replica 0 the variable's port (what a caller scrapes), the others free
    ports; unset, every replica gets a free port (per-replica load is worth seeing). -1 keeps metrics off."""
    value = (env_value or "").strip()
    try:
        port = int(value) if value else None
    except ValueError:
        raise ValueError(f"OMNI_CODEC_METRICS_PORT={env_value!r} is not a port number") from None
    if port is not None and port < 0:
        return [None] * replicas
    if port is None and replicas == 1:
        return [None]
    ports = free_ports(replicas)
    if port:
        ports[0] = port
    return ports


@dataclass
class BackendProcess:
    """One backend process as serve starts and prints it."""

    name: str  # Stack key and log file stem: "codec", "codec-1", ...
    label: str  # as printed in the ready message: "codec", "codec1", ...
    service: str  # the `omni <service>` subcommand
    port: int
    device: str
    metrics_port: int | None = None


class Stack:
    """The subprocesses; `stop()` ends them with SIGTERM (SIGKILL after a timeout)."""

    def __init__(self, work_dir: Path, common_env: dict[str, str] | None = None) -> None:
        self.work_dir = work_dir
        self.common_env = common_env or {}  # added to every process's environment (an MPS daemon's pipes)
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None, service: str = "") -> None:
        """Run `omni <service or name> args`, logging to `<name>.log`."""
        log = (self.work_dir / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "omni.cli", service or name, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**(os.environ if env is None else env), **self.common_env} if self.common_env else env,
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


def wait_http_ready(stack: Stack, url: str, deadline: float, workers: int = 1) -> None:
    """Poll the gateway's readiness until each of its `workers` processes has answered 200. Every worker watches
    the backends on its own, so one ready worker says nothing of the others: a request sent to a worker that had not
    yet seen the codec come back failed with "no codec replica is available" (docs/benchmarks.md, run 40)."""
    import httpx

    from omni.services.gateway.workers import WORKER_HEADER

    ready_workers: set[str] = set()

    def ready() -> bool:
        # A new connection per GET: the kernel spreads connections over the workers' sockets (SO_REUSEPORT).
        for _ in range(2 * workers):
            try:
                response = httpx.get(url, timeout=1.0)
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                ready_workers.add(response.headers.get(WORKER_HEADER.decode(), ""))
        return len(ready_workers) >= workers

    wait_until(stack, ready, f"{url} on {workers} gateway worker(s)", deadline)


def run(args: argparse.Namespace) -> int:
    devices = {name: getattr(args, f"{name}_device") or args.device for name in SERVICES}
    codec_devices = device_list(args.codec_devices) or [devices["codec"]] * args.codec_replicas  # a process each
    if args.mps and not any(d.startswith("cuda") for d in [*devices.values(), *codec_devices]):
        print("omni serve: --mps shares a GPU between the services' processes: it needs a cuda device", file=sys.stderr)
        return 2
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
    common = ["--model", model, "--host", "127.0.0.1", "--log-level", args.log_level]
    try:
        pinned = {name: pin_gpu(devices[name], dict(os.environ)) for name in ("refenc", "talker")}
        codec_pinned = [pin_gpu(d, dict(os.environ)) for d in codec_devices]
        codec_metrics = codec_metrics_ports(os.environ.get("OMNI_CODEC_METRICS_PORT"), len(codec_devices))
    except ValueError as e:
        print(f"omni serve: {e}", file=sys.stderr)
        return 2
    device = {name: ["--device", pinned[name][0], "--dtype", args.dtype] for name in ("refenc", "talker")}
    envs = {name: pinned[name][1] for name in ("refenc", "talker")}
    # An operator's own OMNI_TALKER_ASYNC_SCHEDULING wins.
    queue_ahead = talker_queues_ahead(devices["talker"], codec_devices, args.mps)
    queue_ahead = queue_ahead and "OMNI_TALKER_ASYNC_SCHEDULING" not in os.environ
    ports = iter(free_ports(2 + len(codec_devices)))
    refenc = BackendProcess("refenc", "refenc", "refenc", next(ports), devices["refenc"])
    # Replica 0 keeps the single codec's names (codec.log, "codec service:"); replica k logs to codec-k.log.
    codecs = [
        BackendProcess(f"codec-{k}" if k else "codec", f"codec{k or ''}", "codec", next(ports), codec_devices[k], m)
        for k, m in enumerate(codec_metrics)
    ]
    talker = BackendProcess("talker", "talker", "talker", next(ports), devices["talker"])
    # The codec streams serve sized for one process, split over the replicas: the total stays (at least) the same.
    codec_streams = -(-(args.codec_max_streams or 2 * args.max_streams) // len(codec_devices))

    # The MPS daemon is up before any service makes a CUDA context, and quits after they have all stopped.
    daemon = contextlib.ExitStack()
    try:
        mps_env = daemon.enter_context(mps.mps_daemon(work_dir)) if args.mps else {}
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"omni serve: --mps: {e}", file=sys.stderr)
        return 1
    stack = Stack(work_dir, mps_env)
    stopping = False

    def on_signal(signum, frame) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        refenc_args = [*common, *device["refenc"], "--port", str(refenc.port), "--redis-url", args.redis_url]
        stack.start("refenc", refenc_args, envs["refenc"])
        for codec, (codec_device, codec_env) in zip(codecs, codec_pinned, strict=True):
            codec_args = [*common, "--device", codec_device, "--dtype", args.dtype, "--port", str(codec.port)]
            codec_args += ["--max-streams", str(codec_streams)]
            if codec.metrics_port is not None:
                codec_args += ["--metrics-port", str(codec.metrics_port)]
            stack.start(codec.name, codec_args, codec_env, service="codec")
        talker_streams = str(args.max_streams)
        talker_args = [*common, *device["talker"], "--port", str(talker.port), "--max-streams", talker_streams]
        if queue_ahead:
            talker_args += ["--async-scheduling", "true"]
        stack.start("talker", talker_args, envs["talker"])
        stack.start(
            "gateway",
            [
                "--model", model, "--host", args.host, "--port", str(http_port), "--grpc-port", str(grpc_port),
                "--log-level", args.log_level, "--workers", str(args.gateway_workers),
                "--talkers", f"127.0.0.1:{talker.port}",
                "--codecs", ",".join(f"127.0.0.1:{codec.port}" for codec in codecs),
                "--refencs", f"127.0.0.1:{refenc.port}",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + args.ready_timeout_s
        backends = [refenc, *codecs, talker]
        for backend in backends:
            wait_grpc_serving(stack, f"127.0.0.1:{backend.port}", deadline)
        host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
        wait_http_ready(stack, f"http://{host}:{http_port}/ready", deadline, args.gateway_workers)
        print(f"omni is ready (logs in {work_dir}):", flush=True)
        print(f"  OpenAI-compatible HTTP API: http://{host}:{http_port}/v1  (POST /v1/audio/speech)", flush=True)
        print(f"  gRPC Speech service:        {host}:{grpc_port}", flush=True)
        print(f"  metrics:                    http://{host}:{http_port}/metrics", flush=True)
        workers = f", {args.gateway_workers} worker processes" if args.gateway_workers > 1 else ""
        print(f"  gateway:                    pid {stack.processes['gateway'].pid}{workers}", flush=True)
        for backend in backends:
            # bench_stack reads `<label> service: <address> (pid N)` from these lines.
            pid = stack.processes[backend.name].pid
            line = f"  {backend.label + ' service:':<28}127.0.0.1:{backend.port} (pid {pid}) on {backend.device}"
            if backend.service == "codec":
                line += f", {codec_streams} streams"
            if backend.service == "talker" and queue_ahead:
                line += ", queueing steps ahead"
            if backend.metrics_port is not None:
                line += f", metrics port {backend.metrics_port}"
            print(line, flush=True)
        hint = mps_hint(devices["talker"], codec_devices, args.mps, shutil.which(mps.CONTROL) is not None)
        if hint:
            print(hint, flush=True)
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
        daemon.close()
