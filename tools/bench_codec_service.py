"""Codec service load test: N concurrent streams over loopback gRPC against `omni codec` in a subprocess.

    python tools/bench_codec_service.py --device cuda --dtype bfloat16 --streams 64 256 --modes eager graphs --check 16

Without --model it writes a random-weight codec at the released size (config.json + speech_tokenizer/) to a
temp dir (--tiny: small widths, for a CPU smoke test). Every stream sends its whole utterance as a 1-frame chunk
then 15-frame chunks as fast as the service accepts them (a throughput test: the service's backlog bound paces
the senders). Each mode starts its own server: `eager` = `--cuda-graphs false --fused-kernels off`, `graphs` = the
service defaults (CUDA graphs and Triton kernels on CUDA). Prints one JSON line per (mode, concurrency level):
audio seconds per second, time to first audio (p50/p99), chunk latency, and the server's decode calls by path
(graph / eager, from its /metrics). With --check N, the PCM of N streams is compared with a whole-utterance decode
in this process, with the same kernels as the server: fp32 must agree within 1e-4; bf16/fp16 within the bf16
tolerance of docs/benchmarks.md, max(max abs of that whole decode vs an fp32 whole decode, 1e-2).
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np

from omni.commands.serve import free_port
from omni.proto import codec_pb2, codec_pb2_grpc, common_pb2

ROOT = Path(__file__).resolve().parent.parent
RELEASED_DECODER = {
    "decoder_codebook_dim": 512,
    "decoder_latent_dim": 1024,
    "decoder_hidden_size": 512,
    "decoder_intermediate_size": 1024,
    "decoder_num_hidden_layers": 8,
    "decoder_num_attention_heads": 16,
    "decoder_num_key_value_heads": 16,
    "decoder_head_dim": 64,
    "decoder_sliding_window": 72,
    "decoder_decoder_dim": 1536,
}


TINY_DECODER = {"decoder_decoder_dim": 16, "decoder_latent_dim": 16, "decoder_sliding_window": 4}
# `omni codec` without the other subcommands' imports (the GPU image lacks the gateway's and audio's packages).
SERVER = (
    "import argparse, sys; from omni.commands import codec; parser = argparse.ArgumentParser(); "
    "codec.register(parser.add_subparsers()); args = parser.parse_args(sys.argv[1:]); sys.exit(args.func(args))"
)
MODES = {"eager": ["--cuda-graphs", "false", "--fused-kernels", "off"], "graphs": []}


def write_model(out: Path, sizes: dict) -> Path:
    from omni.models.qwen3_tts import codec_checkpoint
    from omni.models.qwen3_tts.tiny import tiny_config

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(tiny_config("custom_voice")))
    # The codec service reads only the `decoder.` weights; leaving the encoder out keeps this script independent
    # of the installed transformers' Mimi key names (the GPU image has another version).
    codec_checkpoint.tiny_encoder_state = lambda config, gen: {}
    codec_checkpoint.write_tiny_speech_tokenizer(out / "speech_tokenizer", seed=0, **sizes)
    return out


def plan_sizes(total: int, first: int, steady: int) -> list[int]:
    sizes = [min(first, total)]
    while sum(sizes) < total:
        sizes.append(min(steady, total - sum(sizes)))
    return sizes


def chunks_of(codes: np.ndarray, first: int, steady: int):
    """(first frame, CodecChunk) of an utterance: a `first`-frame chunk, then `steady`-frame chunks."""
    start = 0
    sizes = plan_sizes(len(codes), first, steady)
    for k, n in enumerate(sizes):
        part = codes[start : start + n]
        chunk = common_pb2.CodecChunk(
            codes=part.astype("<i2").tobytes(),
            num_frames=n,
            num_codebooks=16,
            first_frame_index=start,
            last=k == len(sizes) - 1,
        )
        yield start, chunk
        start += n


async def one_stream(stub, identity, codes: np.ndarray, first: int, steady: int) -> dict:
    """One utterance over its own Decode call."""

    async def requests():
        yield codec_pb2.DecodeRequest(
            open=codec_pb2.DecodeOpen(model=identity, sample_format=common_pb2.SAMPLE_FORMAT_PCM_F32LE)
        )
        for start, chunk in chunks_of(codes, first, steady):
            sent[start] = time.perf_counter()
            yield codec_pb2.DecodeRequest(chunk=chunk)

    sent: dict[int, float] = {}
    t0 = time.perf_counter()
    ttfa, latencies, pcm = None, [], []
    async for message in stub.Decode(requests()):
        if message.WhichOneof("kind") == "audio":
            now = time.perf_counter()
            ttfa = ttfa if ttfa is not None else now - t0
            latencies.append(now - sent[message.audio.first_frame_index])
            pcm.append(np.frombuffer(message.audio.pcm, dtype="<f4"))
    return {"ttfa": ttfa, "latencies": latencies, "pcm": np.concatenate(pcm)}


async def one_shared_stream(shared, identity, codes: np.ndarray, first: int, steady: int) -> dict:
    """One utterance as a stream of a shared DecodeMany call, through the gateway's client of it."""

    async def feed():
        for start, chunk in chunks_of(codes, first, steady):
            sent[start] = time.perf_counter()
            await stream.write_chunk(chunk)  # waits while the stream's backlog is full

    sent: dict[int, float] = {}
    t0 = time.perf_counter()
    stream = shared.open_codec(codec_pb2.DecodeOpen(model=identity, sample_format=common_pb2.SAMPLE_FORMAT_PCM_F32LE))
    await stream.started()
    feeding = asyncio.create_task(feed())
    ttfa, latencies, pcm = None, [], []
    while (event := await stream.read()).WhichOneof("kind") == "audio":
        now = time.perf_counter()
        ttfa = ttfa if ttfa is not None else now - t0
        latencies.append(now - sent[event.audio.first_frame_index])
        pcm.append(np.frombuffer(event.audio.pcm, dtype="<f4"))
    await feeding
    return {"ttfa": ttfa, "latencies": latencies, "pcm": np.concatenate(pcm)}


async def run_level(
    port: int, streams: int, frames: int, first: int, steady: int, seed: int, shared_calls: int = 0
) -> tuple[dict, list]:
    """`streams` utterances at once: each over its own Decode call, or with `shared_calls` > 0 spread over that
    many DecodeMany calls (as that many gateway workers would)."""
    from omni.services.gateway.shared_calls import SharedCall

    rng = np.random.default_rng(seed)
    utterances = [rng.integers(0, 2048, size=(frames, 16)) for _ in range(streams)]
    options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        stub = codec_pb2_grpc.CodecServiceStub(channel)
        identity = (await stub.GetModelInfo(codec_pb2.GetModelInfoRequest())).model
        shared = [SharedCall.to_codec(stub) for _ in range(shared_calls)]
        t0 = time.perf_counter()
        try:
            if shared:
                runs = (
                    one_shared_stream(shared[i % len(shared)], identity, u, first, steady)
                    for i, u in enumerate(utterances)
                )
            else:
                runs = (one_stream(stub, identity, u, first, steady) for u in utterances)
            results = await asyncio.gather(*runs)
            wall = time.perf_counter() - t0
        finally:
            for call in shared:
                await call.close()
    ttfa = np.array([r["ttfa"] for r in results]) * 1000
    lat = np.concatenate([r["latencies"] for r in results]) * 1000
    audio_s = streams * frames * 1920 / 24000
    row = {
        "streams": streams,
        "frames": frames,
        "wall_s": round(wall, 3),
        "audio_s_per_s": round(audio_s / wall, 1),
        "ttfa_ms_p50": round(float(np.percentile(ttfa, 50)), 1),
        "ttfa_ms_p99": round(float(np.percentile(ttfa, 99)), 1),
        "chunk_latency_ms_p50": round(float(np.percentile(lat, 50)), 1),
        "chunk_latency_ms_p99": round(float(np.percentile(lat, 99)), 1),
    }
    return row, list(zip(utterances, [r["pcm"] for r in results], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="checkpoint dir (default: a random-weight released-size codec)")
    parser.add_argument("--tiny", action="store_true", help="random codec at tiny widths (CPU smoke test)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--modes", nargs="+", default=["graphs"], choices=sorted(MODES), help="server setups")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 32, 128])
    parser.add_argument("--frames", type=int, default=125, help="frames per utterance (125 = 10 s)")
    parser.add_argument("--first", type=int, default=1, help="frames in the first chunk")
    parser.add_argument("--steady", type=int, default=15, help="frames in later chunks")
    parser.add_argument("--extra", default="", help="more `omni codec` flags, e.g. '--min-batch 32'")
    parser.add_argument("--check", type=int, default=0, help="compare this many streams with a whole decode")
    parser.add_argument("--server-logs", type=Path, help="write each server's log to DIR/server-<mode>.log")
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory()
    model = args.model or write_model(Path(tmp.name) / "codec-random", TINY_DECODER if args.tiny else RELEASED_DECODER)
    try:
        for mode in args.modes:
            run_mode(args, model, mode)
    finally:
        tmp.cleanup()


def run_mode(args, model: Path, mode: str) -> None:
    port, metrics_port = free_port(), free_port()
    cmd = [sys.executable, "-c", SERVER, "codec", "--model", str(model), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--metrics-port", str(metrics_port), "--device", args.device, "--dtype", args.dtype]
    cmd += ["--max-streams", str(max(args.streams)), "--log-level", "info", *MODES[mode], *args.extra.split()]
    started = time.perf_counter()
    log_file = None
    if args.server_logs:
        args.server_logs.mkdir(parents=True, exist_ok=True)
        log_file = open(args.server_logs / f"server-{mode}.log", "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy(), stdout=log_file, stderr=log_file)
    try:
        wait_serving(port, server)
        print(json.dumps({"mode": mode, "server_ready_s": round(time.perf_counter() - started, 1)}), flush=True)
        checker = Checker(model, args.device, args.dtype, fused=mode == "graphs") if args.check else None
        for i, n in enumerate(args.streams):
            # Warm-up: one first chunk and one steady chunk per stream, so eager mode has met every timed shape.
            warm = min(args.frames, args.first + args.steady)
            asyncio.run(run_level(port, n, warm, args.first, args.steady, seed=99))
            before = decode_calls(metrics_port)
            row, outputs = asyncio.run(run_level(port, n, args.frames, args.first, args.steady, seed=i))
            after = decode_calls(metrics_port)
            row = {"mode": mode, **row}
            row.update({f"decode_calls_{path}": after.get(path, 0) - before.get(path, 0) for path in after})
            if checker is not None:
                row.update(checker.check(outputs[: args.check]))
            print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
        if log_file is not None:
            log_file.close()


def decode_calls(metrics_port: int) -> dict[str, int]:
    """The server's decode_calls counter by path (graph, eager)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {m[1]: int(float(m[2])) for m in re.finditer(r'decode_calls_total\{path="(\w+)"\} (\S+)', text)}


def wait_serving(port: int, server: subprocess.Popen) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for _ in range(1200):
            try:
                if (
                    health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
            except grpc.RpcError:
                pass
            if server.poll() is not None:
                raise SystemExit(f"codec service exited with {server.returncode} before it was ready")
            time.sleep(0.25)
    raise SystemExit("codec service did not become ready")


class Checker:
    """Whole-utterance decodes in this process, with the server's kernels, to compare streamed PCM with."""

    def __init__(self, model: Path, device: str, dtype: str, fused: bool) -> None:
        import torch

        from omni.models.qwen3_tts.codec import load_codec_decoder
        from omni.models.qwen3_tts.codec_graphs import fuse_residual_units, fuse_snakebeta

        torch.backends.cudnn.allow_tf32 = False  # as the service does for fp32
        self.torch = torch
        self.device = device
        self.dtype = dtype
        self.decoder = load_codec_decoder(model, dtype=getattr(torch, dtype), device=device)
        # The service's Triton kernels (CUDA, bf16/fp16 only): the whole decode runs the same kernels.
        self.fused = fused and device.startswith("cuda") and dtype != "float32"
        if self.fused:
            fuse_snakebeta(self.decoder)
            fuse_residual_units(self.decoder)
        self.fp32 = None if dtype == "float32" else load_codec_decoder(model, dtype=torch.float32, device=device)

    def check(self, outputs: list) -> dict:
        torch = self.torch
        codes = torch.from_numpy(np.stack([c for c, _ in outputs])).to(self.device)
        got = np.stack([pcm for _, pcm in outputs])
        with torch.no_grad():
            want = self.decoder.decode(codes).float().cpu().numpy()
            if self.fp32 is None:
                tolerance = 1e-4
            else:
                exact = self.fp32.decode(codes).cpu().numpy()
                tolerance = max(float(np.abs(want - exact).max()), 1e-2)
        worst = float(np.abs(want - got).max())
        return {
            "check_streams": len(outputs),
            "check_fused_kernels": self.fused,
            "check_max_abs_diff": worst,
            "check_tolerance": tolerance,
            "check_ok": worst <= tolerance,
        }


if __name__ == "__main__":
    main()
