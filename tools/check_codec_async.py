"""The codec engine's audio with asynchronous scheduling on a GPU equals the whole-utterance decode, as synchronous
scheduling's does.

    python tools/check_codec_async.py --device cuda --out check_codec_async.json

On CUDA the engine replays CUDA graphs, stages codes through pinned memory and copies each tick's PCM to the host
without a sync (`StepPcm`), so a tick queued before the previous one is read back exercises what the CPU tests
cannot: stream order between the graphs' static buffers, the state's slots and the copies. A tiny fp32 decoder
(tests/codec_streams.py's config, TF32 off) decodes 12 streams (S16 and F32, three primed with reference codes)
fed in uneven chunks while the engine runs, in both modes; each stream's audio is compared with the decoder's
whole decode of its codes. Exits 1 if any stream is off by more than the tolerance (fp32: 1e-5; S16: 1.5 LSB).
"""

import argparse
import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from omni.services.codec.engine import CodecEngine, codec_graph_buckets  # noqa: E402
from omni.services.common.packing import decode_pcm  # noqa: E402

from omni.proto import common_pb2  # noqa: E402
from tests.codec_streams import tiny_codec_decoder  # noqa: E402

S16, F32 = common_pb2.SAMPLE_FORMAT_PCM_S16LE, common_pb2.SAMPLE_FORMAT_PCM_F32LE
PLANS = [[1], [1, 2, 4, 8, 15], [2], [1, 3], [3, 1, 2], [15], [1, 2, 5]]


def streams(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray | None, list[int], int]]:
    """(codes, reference codes or None, chunk plan, sample format) of each stream."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(12):
        codes = rng.integers(0, 2048, size=(int(rng.integers(8, 40)), 16))
        ref = rng.integers(0, 2048, size=(int(rng.integers(2, 6)), 16)) if i % 4 == 0 else None
        out.append((codes, ref, PLANS[i % len(PLANS)], (S16, F32)[i % 2]))
    return out


def whole_decode(decoder, codes: np.ndarray, ref: np.ndarray | None) -> np.ndarray:
    full = codes if ref is None else np.concatenate([ref, codes])
    wave = decoder.decode(torch.from_numpy(full)[None].to(decoder_device(decoder)))[0].float().cpu().numpy()
    return wave[(0 if ref is None else len(ref)) * decoder.samples_per_frame :]


def decoder_device(decoder) -> torch.device:
    return next(decoder.parameters()).device


async def run_engine(decoder, cases, async_scheduling: bool, graphs: bool) -> list[np.ndarray]:
    engine = CodecEngine(
        decoder,
        max_streams=len(cases),
        graph_buckets=codec_graph_buckets([1, 2, 4, 8, 16], len(cases)) if graphs else [],  # as the service caps them
        graph_chunk_lengths=[1, 4, 8, 15],
        async_scheduling=async_scheduling,
    )
    engine.start()

    async def one(codes, ref, plan, fmt) -> np.ndarray:
        stream = engine.open(fmt, ref)
        start, k = 0, 0
        while start < len(codes):
            n = min(plan[min(k, len(plan) - 1)], len(codes) - start)
            engine.submit(stream, codes[start : start + n], start + n == len(codes))
            start, k = start + n, k + 1
            await asyncio.sleep(0.002 * (k % 3))  # uneven arrival: ticks of changing shapes
        pcm, frames = [], 0
        while frames < len(codes):
            piece = await stream.outputs.get()
            if isinstance(piece, Exception):
                raise piece
            pcm.append(decode_pcm(piece.pcm, fmt))
            frames += piece.num_frames
        engine.release(stream)
        return np.concatenate(pcm)

    try:
        return await asyncio.gather(*(one(*case) for case in cases))
    finally:
        await engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    decoder = tiny_codec_decoder(torch.float32).to(args.device)
    cases = streams()
    with torch.no_grad():
        want = [whole_decode(decoder, codes, ref) for codes, ref, _, _ in cases]
    graphs = torch.device(args.device).type == "cuda"
    report, ok = {"device": args.device, "graphs": graphs, "streams": len(cases)}, True
    for mode in ("sync", "async"):
        got = asyncio.run(run_engine(decoder, cases, mode == "async", graphs))
        errors = []
        for (_, _, _, fmt), g, w in zip(cases, got, want, strict=True):
            if fmt == S16:
                w = np.round(np.clip(w, -1, 1) * 32767) / 32767
            errors.append(float(np.abs(g - w).max()) if g.shape == w.shape else float("inf"))
        tolerances = [1.5 / 32767 if fmt == S16 else 1e-5 for *_, fmt in cases]
        passed = all(e <= t for e, t in zip(errors, tolerances, strict=True))
        ok &= passed
        report[mode] = {"max_abs_error": max(errors), "passed": passed}
        print(f"{mode:5s}  max |audio - whole decode| {max(errors):.2e}  {'ok' if passed else 'FAILED'}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
