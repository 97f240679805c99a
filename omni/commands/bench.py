"""`omni bench`: load a running gateway with streaming speech requests and report latency and throughput."""

import argparse
import json
import sys
from pathlib import Path


def comma_list(kind):
    def parse(text: str) -> list:
        try:
            values = [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}") from None
        if not values or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
        return values

    return parse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="load generator against a running gateway (HTTP streaming)",
        description="Send streaming POST /v1/audio/speech requests (raw PCM) closed loop at each concurrency, or "
        "open loop at Poisson arrivals of --rate; print a table and optionally write JSON and a PNG plot.",
    )
    parser.add_argument("--url", required=True, help="gateway base URL, e.g. http://127.0.0.1:8000")
    loop = parser.add_mutually_exclusive_group()
    loop.add_argument(
        "--concurrency", type=comma_list(int), default=[1], help="closed-loop levels, e.g. 1,16,64 (default 1)"
    )
    loop.add_argument("--rate", type=comma_list(float), default=[], help="open loop: requests/s, e.g. 2 or 1,2,4")
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("--requests", type=int, default=0, help="requests per level (default 4 x concurrency, >= 8)")
    amount.add_argument("--duration", type=float, default=0.0, help="seconds per level to keep starting requests")
    texts = parser.add_mutually_exclusive_group()
    texts.add_argument("--texts", type=Path, help="text file, one sentence per line (default: the shipped set)")
    texts.add_argument("--meta-lst", type=Path, help="Seed-TTS style meta.lst (id|prompt_text|prompt_wav|text)")
    parser.add_argument("--voice", default=None, help="speaker or uploaded voice")
    parser.add_argument("--model", default=None, help="served model id (default: the gateway's first)")
    parser.add_argument("--ref-audio", type=Path, default=None, help="WAV for Base models (x-vector-only cloning)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="cap on generated frames per request")
    parser.add_argument(
        "--ignore-eos", action="store_true", help="never stop at end of speech: max_new_tokens - 1 frames per request"
    )
    parser.add_argument("--seed", type=int, default=None, help="shuffle texts; request i gets server seed seed+i")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-request timeout in seconds")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="client processes per level, each at concurrency c/N (or rate/N), so the client is not the bottleneck; "
        "statistics are over all requests (default 1: this process)",
    )
    parser.add_argument(
        "--playout-buffer-ms",
        type=float,
        default=100.0,
        help="also count underrun for a player that starts this long after the first audio (default 100)",
    )
    parser.add_argument(
        "--warm-connections",
        action="store_true",
        help="open each client's connections before a level's clock starts (one per stream of a closed loop), so "
        "the opening wave's time to first audio does not include the client's own start-up and connection set-up",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG (TTFA CDF, throughput) here")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from omni import bench

    if args.requests < 0 or args.duration < 0:
        print("omni bench: --requests and --duration must not be negative", file=sys.stderr)
        return 2
    if args.processes < 1:
        print("omni bench: --processes must be at least 1", file=sys.stderr)
        return 2
    if args.playout_buffer_ms < 0:
        print("omni bench: --playout-buffer-ms must not be negative", file=sys.stderr)
        return 2
    if args.ignore_eos and args.max_new_tokens is None:
        print("omni bench: --ignore-eos needs --max-new-tokens (the fixed length)", file=sys.stderr)
        return 2
    try:
        if args.meta_lst:
            texts = bench.parse_meta_lst(args.meta_lst.read_text(encoding="utf-8"))
        elif args.texts:
            texts = bench.parse_texts(args.texts.read_text(encoding="utf-8"))
        else:
            texts = bench.default_texts()
        if not texts:
            raise ValueError("the text set is empty")
        ref_audio = bench.wav_data_uri(args.ref_audio) if args.ref_audio else None
    except (OSError, ValueError) as exc:
        print(f"omni bench: {exc}", file=sys.stderr)
        return 2
    config = bench.BenchConfig(
        url=args.url,
        texts=texts,
        concurrency=args.concurrency,
        rates=args.rate,
        requests=args.requests,
        duration_s=args.duration,
        voice=args.voice,
        model=args.model,
        max_new_tokens=args.max_new_tokens,
        ignore_eos=args.ignore_eos,
        seed=args.seed,
        ref_audio=ref_audio,
        timeout_s=args.timeout,
        progress=not args.no_progress,
        processes=args.processes,
        playout_buffer_ms=args.playout_buffer_ms,
        warm_connections=args.warm_connections,
    )
    report = asyncio.run(bench.run_bench(config))
    print(bench.format_table(report), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    if args.plot:
        bench.write_plot(report, args.plot)
    failed = sum(level["failed"] for level in report["levels"])
    return 1 if failed else 0
