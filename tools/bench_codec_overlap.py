"""Does a codec tick get cheaper when its small replays run beside its largest one?

    python tools/bench_codec_overlap.py --out bench_codec_overlap.json
    python tools/bench_codec_overlap.py --device cpu --rows 6 --ticks 1 --iters 1   # CPU smoke test, tiny widths

A tick of the codec service decodes rows of several chunk lengths (the talker's ramp chunks of 2, 4 and 8 frames
beside its 15-frame ones), so `plan_replays` gives it several graph replays, and each costs about a millisecond more
than its rows (run 110's capture-time costs: 64x15 17.27 ms, 128x15 33.39 ms). All of a `CodecGraphs`' graphs share
one memory pool, so its replays run one after another. This builds the service's default decoder and engine (random
weights at the released config, bf16, its graphs), captures the small buckets a second time into a pool of their own,
and times realistic ticks (rows drawn from a mix of chunk lengths) three ways, each over the same plan:

  serial       the engine's graphs, replays one after another (what the service does)
  overlapped   the plan's dearest replay on the current stream, the others from the second pool on a side stream
  capture sum  the plan's replays by their capture-time costs (what the engine reports as planned_ms)

and prints a table (ms per tick, and overlapped against serial). It also checks that both ways leave the same audio
and state: a replay from either pool runs the same kernels over the same rows. On CPU (tiny widths, graphs not
captured, no side stream) only that check and the plan's split mean anything; the times are host times.
"""

import argparse
import contextlib
import json
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_codec import our_decoder  # noqa: E402
from omni.services.codec.config import CodecConfig  # noqa: E402
from omni.services.codec.engine import engine_from_config  # noqa: E402

from omni.models.qwen3_tts.codec import CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER  # noqa: E402
from omni.models.qwen3_tts.codec_graphs import CodecGraphs, plan_replays  # noqa: E402

# Row lengths of a tick at 512 streams: mostly steady 15-frame chunks, the rest the ramp's and early sends.
STEADY_SHARE = 0.62
SHORT_LENGTHS = [2, 4, 4, 8, 8, 3, 6, 12, 10]


def tick_lengths(rows: int, rng: random.Random) -> list[int]:
    return [15 if rng.random() < STEADY_SHARE else rng.choice(SHORT_LENGTHS) for _ in range(rows)]


def codes_for(lengths: list[int], seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2048, (n, 16), generator=g) for n in lengths]


class Overlapped:
    """A plan's dearest replay on the current stream and the rest on a side stream, from a second pool's graphs."""

    def __init__(self, main: CodecGraphs, side: CodecGraphs) -> None:
        self.main, self.side = main, side
        self.cuda = main.state.key.device.type == "cuda"
        self.stream = torch.cuda.Stream() if self.cuda else None
        self.side_replays = 0  # of the last tick

    def _on(self, side: bool):
        if not self.cuda:
            return contextlib.nullcontext()
        return torch.cuda.stream(self.stream if side else torch.cuda.current_stream())

    def decode(self, slots: list[int], chunks: list[torch.Tensor]) -> list[torch.Tensor]:
        plan = plan_replays([c.shape[0] for c in chunks], self.main.replay_ms)
        dearest = max(range(len(plan)), key=lambda k: self.main.replay_ms[plan[k][0], plan[k][1]])
        waves: dict[int, torch.Tensor] = {}
        self.side_replays = 0
        if self.cuda:  # the side replays read state the last tick wrote
            self.stream.wait_stream(torch.cuda.current_stream())
        for k, (bucket, length, rows) in enumerate(plan):
            on_side = k != dearest and (bucket, length) in self.side.graphs
            graphs = self.side if on_side else self.main
            self.side_replays += on_side
            with self._on(on_side):
                block = graphs._replay((bucket, length), [slots[i] for i in rows], [chunks[i] for i in rows])
            for j, i in enumerate(rows):
                waves[i] = block[j, : chunks[i].shape[0] * self.main.decoder.samples_per_frame]
        if self.cuda:
            torch.cuda.current_stream().wait_stream(self.stream)
        return [waves[i] for i in range(len(chunks))]


def slot_rows(state, slots: list[int]) -> list[torch.Tensor]:
    """The state of these slots only (key and value keep slots in dim 1): the scratch row is garbage either way."""
    index = torch.tensor(slots, device=state.positions.device)
    return [state.positions[index], state.key[:, index], state.value[:, index], state.key_positions[index]] + [
        h[index] for h in state.history
    ]


def time_ms(step, iters: int) -> float:
    step()
    if not torch.cuda.is_available():
        start = time.perf_counter()
        for _ in range(iters):
            step()
        return (time.perf_counter() - start) * 1000.0 / iters
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[40, 81, 128, 200])
    parser.add_argument("--side-buckets", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--ticks", type=int, default=4, help="tick compositions per row count")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out", default="bench_codec_overlap.json")
    args = parser.parse_args()

    if args.device == "cuda":  # the service's build: its kernels and graphs, as engine_from_config makes them
        config = CodecConfig(device="cuda", dtype="bfloat16", max_streams=256)
        decoder = our_decoder(CodecDecoderConfig(), torch.bfloat16, "cuda")
        main_graphs = engine_from_config(decoder, config, None, 24000).graphs
        side_graphs = CodecGraphs(decoder, main_graphs.state, args.side_buckets, main_graphs.chunk_lengths)
    else:
        decoder = our_decoder(CodecDecoderConfig(**TINY_DECODER), torch.float32, "cpu")
        state = decoder.new_state(max(args.rows) + 1)
        buckets = [b for b in (1, 2, 4, 8) if b <= max(args.rows)]
        main_graphs = CodecGraphs(decoder, state, buckets, (1, 4, 8, 15), capture=False)
        side_graphs = CodecGraphs(decoder, state, buckets[:-1], (1, 4, 8, 15), capture=False)
    state = main_graphs.state
    costs = {f"{b}x{t}": round(ms, 3) for (b, t), ms in sorted(main_graphs.replay_ms.items())}
    overlapped = Overlapped(main_graphs, side_graphs)
    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(json.dumps({"device": device, "torch": torch.__version__, "replay_ms": costs}))

    # Same audio and state both ways: decode one tick from a saved state each way.
    lengths = tick_lengths(min(81, max(args.rows)), random.Random(0))
    chunks = codes_for(lengths, 0)
    slots = list(range(len(chunks)))
    saved = [t.clone() for t in state.tensors()]
    want = [w.clone() for w in main_graphs.decode_streams(slots, chunks)]
    want_state = slot_rows(state, slots)
    for t, s in zip(state.tensors(), saved, strict=True):
        t.copy_(s)
    got = overlapped.decode(slots, chunks)
    if args.device == "cuda":
        torch.cuda.synchronize()
    check = {
        "side_replays": overlapped.side_replays,
        "wav_equal": all(torch.equal(g, w) for g, w in zip(got, want, strict=True)),
        "state_equal": all(torch.equal(g, w) for g, w in zip(slot_rows(state, slots), want_state, strict=True)),
    }
    print(json.dumps({"check": check}), flush=True)

    rows_out = []
    print("| rows | frames | replays | capture sum ms | serial ms | overlapped ms | overlapped / serial |")
    print("|---|---|---|---|---|---|---|")
    for n in args.rows:
        for k in range(args.ticks):
            lengths = tick_lengths(n, random.Random(1000 * n + k))
            chunks = codes_for(lengths, k)
            slots = list(range(n))
            plan = plan_replays(lengths, main_graphs.replay_ms)
            planned = sum(main_graphs.replay_ms[b, t] for b, t, _ in plan)
            serial = time_ms(lambda: main_graphs.decode_streams(slots, chunks), args.iters)  # noqa: B023
            over = time_ms(lambda: overlapped.decode(slots, chunks), args.iters)  # noqa: B023
            row = {
                "rows": n, "frames": sum(lengths), "replays": len(plan), "side_replays": overlapped.side_replays,
                "plan": [(b, t) for b, t, _ in plan],
                "capture_sum_ms": round(planned, 3), "serial_ms": round(serial, 3), "overlapped_ms": round(over, 3),
                "ratio": round(over / serial, 3),
            }  # fmt: skip
            rows_out.append(row)
            print(
                f"| {n} | {row['frames']} | {len(plan)} | {planned:.2f} | {serial:.2f} | {over:.2f} | "
                f"{row['ratio']:.3f} |",
                flush=True,
            )
    Path(args.out).write_text(json.dumps({"replay_ms": costs, "check": check, "rows": rows_out}, indent=1))
    if not (check["side_replays"] and check["wav_equal"] and check["state_equal"]):
        sys.exit(f"CHECK FAILED (no side replay, or audio or state unlike the serial tick's): {check}")


if __name__ == "__main__":
    main()
