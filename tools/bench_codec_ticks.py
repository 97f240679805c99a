"""A codec tick's replays: the planner that picks them, and whether its small ones could run beside its largest.

    python tools/bench_codec_ticks.py --out bench_codec_ticks.json [--steady-share 0.62]
    python tools/bench_codec_ticks.py --device cpu --rows 6 --ticks 1 --iters 1   # CPU smoke test, tiny widths
    OMNI_CODEC_HISTORY_KERNEL=1 python tools/bench_codec_ticks.py --kernels 1x1   # a codec setting, as the service
    python tools/bench_codec_ticks.py --ab window_pair_kernel --ab qk_rope_kernel --rows 40 81 128 --ticks 3

A tick of the codec service decodes rows of several chunk lengths (the talker's ramp chunks of 2, 4 and 8 frames
beside its 15-frame ones, and early sends), so `plan_replays` splits it over graph replays, each with a fixed cost
beyond its rows (~1.2 ms on an H200) and each row padded to its graph's chunk length. This builds the service's
default decoder and engine (random weights at the released config, bf16, its graphs), captures the small buckets a
second time into a pool of their own, and times realistic ticks (rows drawn from a mix of chunk lengths:
`--steady-share` of them 15 frames, the rest 2-12), each:

  previous     serial, with the planner before session 30 (`previous_plan`: the cheaper of two plans, every row
               padded to the longest, or rows by length with spare rows taking shorter ones)
  planned      serial, with today's `plan_replays` (the cheapest plan: a dynamic program over the rows)
  overlapped   today's plan with its dearest replay on the current stream and the others from the second pool on a
               side stream (all of a CodecGraphs' graphs share one pool, so its replays run one after another)

and the capture sums (what the engine reports as planned_ms) of both plans, in a table. `--kernels 1x1 128x15`
first counts the CUDA kernels of those graphs (an eager step over the graph's buffers, and a replay, profiled) and
prints each replay's dearest kernels by device time. It
checks that the overlapped tick leaves the same audio and state as the serial one: a replay from either pool runs the
same kernels over the same rows. On CPU (tiny widths, graphs not captured, no side stream) only that check and the
plans mean anything; the times are host times.

`--ab SWITCHES` instead times realistic ticks with those decoder kernel switches on against the service's build, in
alternating order in this process (`ab_ticks`): the A/B for a switch whose gain is per replay (fewer launches), over
the mix of replays the service runs rather than one graph step. It checks that both sides decode a tick to the same
audio and state (so it is for the bitwise switches).

Run 114 (session 30, the overlap alone): overlapped / serial 0.94-0.96 at 81 rows, 0.97-0.98 at 128-200.
"""

import argparse
import contextlib
import itertools
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_codec import our_decoder, time_step  # noqa: E402
from omni.services.codec.config import CodecConfig  # noqa: E402
from omni.services.codec.engine import (  # noqa: E402
    codec_graph_buckets,
    codec_graph_chunk_lengths,
    engine_from_config,
)
from omni.services.common.config import load_config  # noqa: E402

from omni.models.qwen3_tts.codec import CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER  # noqa: E402
from omni.models.qwen3_tts.codec_graphs import CodecGraphs, codec_step, plan_replays  # noqa: E402

# Row lengths of a tick at 512 streams besides the steady 15-frame chunks: the ramp's and early sends.
SHORT_LENGTHS = [2, 4, 4, 8, 8, 3, 6, 12, 10]


def tick_lengths(rows: int, steady_share: float, rng: random.Random) -> list[int]:
    return [15 if rng.random() < steady_share else rng.choice(SHORT_LENGTHS) for _ in range(rows)]


def previous_plan(lengths: list[int], costs: dict[tuple[int, int], float]) -> list[tuple[int, int, list[int]]]:
    """The replay planner before session 30, for the A/B: the cheaper of all rows at the longest length they need,
    and rows by the shortest captured length that holds them, longest first, a replay's spare rows taking shorter
    chunks (longest of them first). Each length's rows over the cheapest buckets (as plan_replays finds them)."""
    chunk_lengths = sorted({t for _, t in costs})

    def split(rows: list[int], t: int) -> list[tuple[int, int, list[int]]]:
        buckets = [b for b, _, _ in plan_replays([t] * len(rows), {k: c for k, c in costs.items() if k[1] == t})]
        return [(b, t, rows[sum(buckets[:k]) : sum(buckets[: k + 1])]) for k, b in enumerate(buckets)]

    def fit(n: int) -> int:
        return next(t for t in chunk_lengths if t >= n)

    together = split(list(range(len(lengths))), fit(max(lengths)))
    waiting = {t: [i for i, n in enumerate(lengths) if fit(n) == t] for t in chunk_lengths}
    by_length = []
    for t in reversed(chunk_lengths):
        for bucket, _, rows in split(waiting[t], t) if waiting[t] else []:
            for shorter in reversed([u for u in chunk_lengths if u < t]):
                take = bucket - len(rows)
                rows, waiting[shorter] = rows + waiting[shorter][:take], waiting[shorter][take:]
            by_length.append((bucket, t, rows))
    return min(together, by_length, key=lambda plan: sum(costs[b, t] for b, t, _ in plan))


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

    def plan(self, lengths: list[int]) -> list[tuple[int, int, list[int], bool]]:
        """Today's plan, each replay marked for the side stream: all but the dearest, where the side has its graph."""
        plan = plan_replays(lengths, self.main.replay_ms)
        dearest = max(range(len(plan)), key=lambda k: self.main.replay_ms[plan[k][0], plan[k][1]])
        return [(b, t, rows, k != dearest and (b, t) in self.side.graphs) for k, (b, t, rows) in enumerate(plan)]

    def decode(self, slots: list[int], chunks: list[torch.Tensor]) -> list[torch.Tensor]:
        waves: dict[int, torch.Tensor] = {}
        self.side_replays = 0
        if self.cuda:  # the side replays read state the last tick wrote
            self.stream.wait_stream(torch.cuda.current_stream())
        for bucket, length, rows, on_side in self.plan([c.shape[0] for c in chunks]):
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


def kernel_census(step, top: int = 12) -> dict:
    """The CUDA kernels of one call of `step` (after a warm-up): how many, their summed device time, the most
    launched by name (count, summed us), and every kernel by name (for the JSON: which kernels a change removed)."""
    from torch.profiler import ProfilerActivity, profile

    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]

    def us(e) -> float:
        return getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)

    kernels.sort(key=lambda e: -e.count)
    return {
        "kernels": sum(e.count for e in kernels),
        "device_us": round(sum(us(e) for e in kernels), 1),
        "most_launched": [(e.key[:80], e.count, round(us(e), 1)) for e in kernels[:top]],
        "by_name": {e.key: [e.count, round(us(e), 1)] for e in kernels},
    }


def dearest_kernels(census: dict, top: int = 20) -> list[str]:
    """A `kernel_census`'s kernels by summed device time, dearest first, as table rows: share, us, launches, name."""
    rows = sorted(census["by_name"].items(), key=lambda kv: -kv[1][1])[:top]
    total = census["device_us"] or 1.0
    return [f"| {us / total:.1%} | {us:.1f} | {n} | {name[:120]} |" for name, (n, us) in rows]


def ab_ticks(main_graphs: CodecGraphs, switches: list[str], args) -> dict:
    """Decoder switches on against the service's build, over realistic ticks: a second CodecGraphs captured with
    `switches` on (the same decoder, so the same weights and cuDNN choices; a state of its own), the same tick decoded
    by both from the same state (equal audio and state: the bitwise switches' claim), then every tick composition
    timed on each side in alternating order over --ab-rounds rounds (as the service decodes a tick: `decode_step`,
    each side by its own plan). Per row count, the median over rounds of a round's summed tick times."""
    decoder, state = main_graphs.decoder, main_graphs.state
    unknown = sorted(set(switches) - set(decoder.KERNEL_SWITCHES))
    if unknown:
        sys.exit(f"--ab: {unknown} not among the decoder's kernel switches {decoder.KERNEL_SWITCHES}")
    already = [name for name in switches if getattr(decoder, name)]
    if already:  # both sides would be one build
        sys.exit(f"--ab {','.join(switches)}: {already} already on in the service's build (OMNI_CODEC_<NAME>=0 first)")

    @contextlib.contextmanager
    def switched_on():
        """The switches on while the on side captures or decodes (a replay keeps what it captured; on the CPU,
        without graphs, each decode runs the decoder as it is)."""
        before = {name: getattr(decoder, name) for name in switches}
        for name in switches:
            setattr(decoder, name, True)
        try:
            yield
        finally:
            for name, was in before.items():
                setattr(decoder, name, was)

    with switched_on():
        on_graphs = CodecGraphs(
            decoder, decoder.new_state(state.num_slots), main_graphs.buckets, main_graphs.chunk_lengths,
            capture=args.device == "cuda",
        )  # fmt: skip
    sides = {"base": main_graphs, "on": on_graphs}
    context = {"base": contextlib.nullcontext, "on": switched_on}
    print(json.dumps({"ab": switches, "on_replay_ms": {f"{b}x{t}": round(ms, 3) for (b, t), ms in
                                                        sorted(on_graphs.replay_ms.items())}}))  # fmt: skip

    lengths = tick_lengths(min(81, max(args.rows)), args.steady_share[0], random.Random(7))
    chunks, slots = codes_for(lengths, 7), list(range(len(lengths)))
    for t, s in zip(on_graphs.state.tensors(), state.tensors(), strict=True):
        t.copy_(s)
    waves = {}
    for name, graphs in sides.items():
        with context[name]():
            waves[name] = [w.clone() for w in graphs.decode_streams(slots, chunks)]
    rows = {name: slot_rows(graphs.state, slots) for name, graphs in sides.items()}
    check = {
        "wav_equal": all(torch.equal(a, b) for a, b in zip(waves["base"], waves["on"], strict=True)),
        "state_equal": all(torch.equal(a, b) for a, b in zip(rows["base"], rows["on"], strict=True)),
    }
    print(json.dumps({"ab_check": check}), flush=True)

    ticks = []  # (rows, chunks) of every composition, the same for both sides
    for n, k in itertools.product(args.rows, range(args.ticks)):
        lengths = tick_lengths(n, args.steady_share[0], random.Random(1000 * n + k))
        ticks.append((n, codes_for(lengths, k)))
    totals = {(name, n, r): 0.0 for name in sides for n in args.rows for r in range(args.ab_rounds)}
    for r in range(args.ab_rounds):
        for index, (n, chunks) in enumerate(ticks):
            order = list(sides) if (r + index) % 2 == 0 else list(reversed(sides))
            for name in order:
                step = lambda g=sides[name], c=chunks: g.decode_step(list(range(len(c))), c)  # noqa: E731
                with context[name]():
                    totals[name, n, r] += time_step(step, args.device, math.inf, args.iters) * 1000.0

    print("| rows | ticks | base ms (median round) | on ms | change | replays a tick (base / on) |")
    print("|---|---|---|---|---|---|")
    table = []
    for n in args.rows:
        med = {name: statistics.median(totals[name, n, r] for r in range(args.ab_rounds)) for name in sides}
        replays = {
            name: sum(len(plan_replays([c.shape[0] for c in chunks], g.replay_ms)) for m, chunks in ticks if m == n)
            for name, g in sides.items()
        }
        change = med["on"] / med["base"] - 1.0
        rounds = {name: [round(totals[name, n, r], 3) for r in range(args.ab_rounds)] for name in sides}
        table.append({"rows": n, "base_ms": round(med["base"], 3), "on_ms": round(med["on"], 3),
                      "change": round(change, 4), "replays": replays, "rounds": rounds})  # fmt: skip
        print(f"| {n} | {args.ticks} | {med['base']:.2f} | {med['on']:.2f} | {100 * change:+.1f}% | "
              f"{replays['base']} / {replays['on']} |", flush=True)  # fmt: skip
    return {"switches": switches, "check": check, "rows": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[40, 81, 128, 200])
    parser.add_argument("--side-buckets", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--ticks", type=int, default=4, help="tick compositions per row count")
    parser.add_argument(
        "--steady-share", type=float, nargs="+", default=[0.62], help="share of a tick's rows that are 15 frames"
    )
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument(
        "--kernels", nargs="*", default=[], metavar="BxT", help="graphs to count the kernels of (CUDA), e.g. 1x1 128x15"
    )
    parser.add_argument(
        "--ab",
        action="append",
        help="comma-separated decoder kernel switches (CodecDecoder.KERNEL_SWITCHES): time realistic ticks with them "
        "on against the service's build, alternating in this process (ab_ticks), instead of the planner table; "
        "repeat for several A/Bs against the same build",
    )
    parser.add_argument("--ab-rounds", type=int, default=6, help="rounds of --ab (each times every tick both ways)")
    parser.add_argument(
        "--cudnn-benchmark-limit",
        type=int,
        help="cuDNN algorithms the autotuner tries per conv shape (torch.backends.cudnn.benchmark_limit; torch's "
        "default 10, 0 tries every one) while the service's graphs are built",
    )
    parser.add_argument("--out", default="bench_codec_ticks.json")
    args = parser.parse_args()
    torch.set_grad_enabled(False)  # the eager steps of --kernels, as the graphs were captured
    if args.cudnn_benchmark_limit is not None:
        torch.backends.cudnn.benchmark_limit = args.cudnn_benchmark_limit
    built = time.perf_counter()

    if args.device == "cuda":  # the service's build: its kernels and graphs, as engine_from_config makes them
        # with the codec's settings from the environment, as the service reads them (OMNI_CODEC_HISTORY_KERNEL=1)
        config = load_config(CodecConfig, "codec", {"device": "cuda", "dtype": "bfloat16", "max_streams": 256})
        buckets = codec_graph_buckets(config.graph_batch_buckets, config.max_streams)
        lengths = codec_graph_chunk_lengths(config.graph_chunk_lengths, config.max_chunk_frames)
    else:
        buckets, lengths = [b for b in (1, 2, 4, 8) if b <= max(args.rows)], [1, 4, 8, 15]
    # Refused before the build (~180 s on an H100): run 227 asked for 128x2, which the lengths 1/4/8/15 do not hold
    graphs = list(itertools.product(buckets, lengths))
    uncaptured = [key for key in args.kernels if tuple(map(int, key.split("x"))) not in graphs]
    if uncaptured:
        captured = " ".join(f"{b}x{t}" for b, t in graphs)
        sys.exit(f"--kernels {uncaptured}: no such graph; captured: {captured}")
    if args.device == "cuda":
        decoder = our_decoder(CodecDecoderConfig(), torch.bfloat16, "cuda")
        main_graphs = engine_from_config(decoder, config, None, 24000).graphs
    else:
        decoder = our_decoder(CodecDecoderConfig(**TINY_DECODER), torch.float32, "cpu")
        state = decoder.new_state(max(args.rows) + 1)
        main_graphs = CodecGraphs(decoder, state, buckets, lengths, capture=False)
    state = main_graphs.state
    costs = {f"{b}x{t}": round(ms, 3) for (b, t), ms in sorted(main_graphs.replay_ms.items())}
    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    switches = {name: getattr(decoder, name) for name in decoder.KERNEL_SWITCHES}
    limit = torch.backends.cudnn.benchmark_limit
    build_s = round(time.perf_counter() - built, 1)
    print(json.dumps({"device": device, "torch": torch.__version__, "kernel_switches": switches,
                      "cudnn_benchmark_limit": limit, "build_s": build_s, "replay_ms": costs}))  # fmt: skip

    census = {}
    for key in args.kernels:  # one eager codec_step over the graph's own buffers (scratch rows), and one replay
        bucket, length = map(int, key.split("x"))
        graph, io = main_graphs.graphs[bucket, length]
        census[key] = {
            "eager": kernel_census(lambda: codec_step(decoder, state, io["codes"], io["rows"], io["frames"])),  # noqa: B023
            "replay": kernel_census(graph.replay),
            "replay_ms": round(main_graphs.replay_ms[bucket, length], 3),
        }
        print(json.dumps({"kernels": {key: census[key]}}), flush=True)
        replay = census[key]["replay"]
        print(f"\n{key} replay: {replay['kernels']} kernels, {replay['device_us']} us\n")
        table = ["| share | us | launches | kernel |", "|---|---|---|---|", *dearest_kernels(replay)]
        print("\n".join(table), flush=True)

    if args.ab:
        report = {"replay_ms": costs, "kernels": census, "ab": []}
        for switches in args.ab:
            report["ab"].append(ab_ticks(main_graphs, switches.split(","), args))
            Path(args.out).write_text(json.dumps(report, indent=1))
        failed = [ab for ab in report["ab"] if not (ab["check"]["wav_equal"] and ab["check"]["state_equal"])]
        if failed:
            sys.exit(f"CHECK FAILED (a tick's audio or state unlike the base's): {[ab['switches'] for ab in failed]}")
        return

    if args.device == "cuda":  # the side stream's graphs: the small buckets again, in a pool of their own
        side_graphs = CodecGraphs(decoder, main_graphs.state, args.side_buckets, main_graphs.chunk_lengths)
    else:
        side_graphs = CodecGraphs(decoder, state, main_graphs.buckets[:-1], (1, 4, 8, 15), capture=False)
    overlapped = Overlapped(main_graphs, side_graphs)

    # Same audio and state both ways: decode one tick of several replays from a saved state each way.
    def side_keys(lengths: list[int]) -> int:
        """The replays of this tick's plan that go to the side stream."""
        return sum(on_side for *_, on_side in overlapped.plan(lengths))

    rng = random.Random(0)
    draws = [tick_lengths(min(81, max(args.rows)), args.steady_share[0], rng) for _ in range(50)]
    lengths = max(draws, key=side_keys)  # a tick with a replay for the side stream, where the side buckets allow one
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
        "side_replays_planned": side_keys(lengths),
        "wav_equal": all(torch.equal(g, w) for g, w in zip(got, want, strict=True)),
        "state_equal": all(torch.equal(g, w) for g, w in zip(slot_rows(state, slots), want_state, strict=True)),
    }
    print(json.dumps({"check": check}), flush=True)

    def time_ms(step) -> float:
        """Mean ms per call over at least --iters calls (bench_codec's timing: one warm-up, synced)."""
        return time_step(step, args.device, math.inf, args.iters) * 1000.0

    rows_out = []
    print(
        "| steady share | rows | frames | replays (previous / planned) | capture sum ms (previous / planned) | "
        "previous ms | planned ms | planned / previous | overlapped ms | overlapped / planned |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for share, n, k in itertools.product(args.steady_share, args.rows, range(args.ticks)):
        lengths = tick_lengths(n, share, random.Random(1000 * n + k))
        chunks = codes_for(lengths, k)
        slots = list(range(n))
        plans = {"previous": previous_plan(lengths, main_graphs.replay_ms)}
        plans["planned"] = plan_replays(lengths, main_graphs.replay_ms)
        capture = {name: sum(main_graphs.replay_ms[b, t] for b, t, _ in p) for name, p in plans.items()}
        times = {}
        for name, planner in (("previous", previous_plan), ("planned", plan_replays)):
            main_graphs.planner = planner
            times[name] = time_ms(lambda: main_graphs.decode_streams(slots, chunks))  # noqa: B023
        main_graphs.planner = plan_replays
        times["overlapped"] = time_ms(lambda: overlapped.decode(slots, chunks))  # noqa: B023
        row = {
            "steady_share": share, "rows": n, "frames": sum(lengths), "side_replays": overlapped.side_replays,
            **{f"{name}_plan": [(b, t) for b, t, _ in p] for name, p in plans.items()},
            **{f"{name}_capture_ms": round(ms, 3) for name, ms in capture.items()},
            **{f"{name}_ms": round(ms, 3) for name, ms in times.items()},
            "planned_vs_previous": round(times["planned"] / times["previous"], 3),
            "overlapped_vs_planned": round(times["overlapped"] / times["planned"], 3),
        }  # fmt: skip
        rows_out.append(row)
        print(
            f"| {share} | {n} | {row['frames']} | {len(plans['previous'])} / {len(plans['planned'])} | "
            f"{capture['previous']:.2f} / {capture['planned']:.2f} | {times['previous']:.2f} | "
            f"{times['planned']:.2f} | {row['planned_vs_previous']:.3f} | {times['overlapped']:.2f} | "
            f"{row['overlapped_vs_planned']:.3f} |",
            flush=True,
        )
    report = {"replay_ms": costs, "kernels": census, "check": check, "rows": rows_out}
    Path(args.out).write_text(json.dumps(report, indent=1))
    if not (check["wav_equal"] and check["state_equal"]) or check["side_replays"] != check["side_replays_planned"]:
        sys.exit(f"CHECK FAILED (audio or state unlike the serial tick's, or side replays not as planned): {check}")


if __name__ == "__main__":
    main()
