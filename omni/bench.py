"""Load generator for a running gateway: streaming `POST /v1/audio/speech` (raw s16le PCM) from async httpx clients.

Closed loop keeps `concurrency` requests in flight; open loop starts requests at Poisson arrival times of a given
rate, however many are still running. Per request it records the time to first audio byte, the total time, the
audio length and the underrun a real-time player would suffer (starting at the first byte, and again starting
`playout_buffer_ms` later, as a player with a small jitter buffer would); per level it aggregates those into the
figures of `summarize`. The statistics are pure functions so they can be tested by hand.

One Python process runs out of CPU long before a GPU server does (hundreds of streams of 24 kHz audio), so a level
can be split over `processes` spawned clients (`split_level`): each keeps c/N streams in flight (or starts requests
at rate/N) over interleaved request indices and sends every per-request result back; the parent merges them
(`merge_results`) and computes every statistic over all requests and the level's whole wall time, as for one client.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.resources
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

SAMPLE_RATE = 24000
BYTES_PER_SECOND = 2 * SAMPLE_RATE  # s16le mono


# --- statistics (pure) ----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default); nan if empty."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def starvations(arrivals_s: list[float], durations_s: list[float], buffer_s: float = 0.0) -> list[tuple[float, float]]:
    """Each time a real-time player starves, as (seconds of audio played before it, seconds it waited): playback
    starts `buffer_s` after the first chunk arrives (0: at once) and plays chunks back to back; whenever a chunk
    arrives after the audio before it has finished playing, the player waits for it."""
    if len(arrivals_s) != len(durations_s):
        raise ValueError("arrivals_s and durations_s must have the same length")
    if buffer_s < 0:
        raise ValueError(f"buffer_s must be >= 0, got {buffer_s}")
    if not arrivals_s:
        return []
    play_end, played = arrivals_s[0] + buffer_s + durations_s[0], durations_s[0]
    gaps = []
    for arrival, duration in zip(arrivals_s[1:], durations_s[1:], strict=True):
        if arrival > play_end:
            gaps.append((played, arrival - play_end))
            play_end = arrival
        play_end += duration
        played += duration
    return gaps


def underrun_seconds(arrivals_s: list[float], durations_s: list[float], buffer_s: float = 0.0) -> float:
    """Total time a real-time player starves (`starvations`)."""
    return sum((waited for _, waited in starvations(arrivals_s, durations_s, buffer_s)), 0.0)


def first_gap_at(arrivals_s: list[float], durations_s: list[float]) -> float | None:
    """Where a player started at the first chunk first starves, in seconds of audio played before it (None: never).
    Early gaps (the first chunks' jitter) and late ones (a backlog) have different causes."""
    gaps = starvations(arrivals_s, durations_s)
    return gaps[0][0] if gaps else None


@dataclass
class RequestResult:
    index: int
    status: str  # "200", another HTTP status, or "error:<exception type>"
    ok: bool
    start_s: float  # since the level started
    ttfa_s: float | None = None  # time to the first audio byte
    total_s: float | None = None
    audio_s: float = 0.0
    rtf: float | None = None  # total time / audio seconds
    underrun_s: float = 0.0
    error: str = ""
    underrun_buffered_s: float = 0.0  # the same with playback starting BenchConfig.playout_buffer_ms later
    first_gap_at_s: float | None = None  # seconds of audio played before the first gap (None: no gap)
    request_id: str = ""  # the gateway's X-Request-Id: finds this request's lines in the services' logs
    start_epoch_s: float = 0.0  # wall clock at the start (time.time()): places it against those lines' timestamps
    # To the start of the request's write (after any new connection): the client's own part, its loop and connecting.
    # Not the last byte written: the server may read that before the client's trace callback runs.
    write_start_s: float | None = None
    new_connection: bool = False  # whether this request opened a connection (or took a kept-alive one)


def summarize(results: list[RequestResult], elapsed_s: float, first_wave: int = 0) -> dict:
    """Aggregate one level's requests; throughput figures are over `elapsed_s`, the level's wall time.

    `first_wave`: a closed loop's concurrency, whose first requests all start at once; `ttfa_after_first_wave_*` are
    over the requests started after those (the steady state, without the opening burst of prefills), and so is
    `underrun_after_first_wave_pct` (the share of them with a gap from the first byte: the burst's prefills stretch
    the early chunks of the streams admitted before them, so most of a closed loop's gaps can be in its first wave)."""
    ok = [r for r in results if r.ok]
    ttfa = [r.ttfa_s for r in ok if r.ttfa_s is not None]
    later = sorted(results, key=lambda r: r.start_s)[first_wave:] if first_wave else []
    later_ok = [r for r in later if r.ok]
    steady_ttfa = [r.ttfa_s for r in later_ok if r.ttfa_s is not None]
    rtf = [r.rtf for r in ok if r.rtf is not None]
    audio = sum(r.audio_s for r in ok)
    spans = [(r.start_s, r.start_s + r.total_s) for r in results if r.total_s is not None]
    first_gaps = [r.first_gap_at_s for r in ok if r.first_gap_at_s is not None]
    silences = [r.underrun_s for r in ok if r.underrun_s > 0]
    # A listener plays a request's audio from its first byte, in real time; a gap holds playback back.
    playing = [
        (r.start_s + r.ttfa_s, r.start_s + r.ttfa_s + r.audio_s + r.underrun_s) for r in ok if r.ttfa_s is not None
    ]
    failures: dict[str, int] = {}
    failure_examples: dict[str, str] = {}  # the first error message per status, to say why
    for r in results:
        if not r.ok:
            failures[r.status] = failures.get(r.status, 0) + 1
            failure_examples.setdefault(r.status, r.error)
    return {
        "requests": len(results),
        "succeeded": len(ok),
        "failed": len(results) - len(ok),
        "failures": failures,
        "failure_examples": failure_examples,
        "elapsed_s": elapsed_s,
        "requests_per_s": len(ok) / elapsed_s if elapsed_s > 0 else math.nan,
        "audio_s_per_s": audio / elapsed_s if elapsed_s > 0 else math.nan,
        "audio_s": audio,
        # Streams open at once (Little's law over the level, and the peak): an open loop's concurrency.
        "mean_in_flight": sum(end - start for start, end in spans) / elapsed_s if elapsed_s > 0 else math.nan,
        "max_in_flight": max_overlap(spans),
        # Listeners at once, at the peak: in an open loop, the real-time streams the level served.
        "max_listening": max_overlap(playing),
        "ttfa_p50_s": percentile(ttfa, 50),
        "ttfa_p90_s": percentile(ttfa, 90),
        "ttfa_p99_s": percentile(ttfa, 99),
        "ttfa_after_first_wave_p50_s": percentile(steady_ttfa, 50),
        "ttfa_after_first_wave_p99_s": percentile(steady_ttfa, 99),
        "underrun_after_first_wave_pct": (
            100.0 * sum(1 for r in later_ok if r.underrun_s > 0) / len(later_ok) if later_ok else math.nan
        ),
        "rtf_p50": percentile(rtf, 50),
        "rtf_p90": percentile(rtf, 90),
        "underrun_total_s": sum(r.underrun_s for r in ok),
        "requests_with_underrun": sum(1 for r in ok if r.underrun_s > 0),
        "requests_with_underrun_buffered": sum(1 for r in ok if r.underrun_buffered_s > 0),
        # Where the gapped requests first starved, in seconds of audio played (the first chunks, or later).
        "first_gap_at_p50_s": percentile(first_gaps, 50),
        "first_gap_at_p90_s": percentile(first_gaps, 90),
        # How long the gapped requests were silent in all (a buffer that long would have hidden each one's gaps).
        "gap_silence_p50_s": percentile(silences, 50),
        "gap_silence_p90_s": percentile(silences, 90),
        "gap_silence_max_s": max(silences, default=math.nan),
    }


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most [start, end) intervals open at one time."""
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    best = now = 0
    for _, step in events:  # at equal times an end (-1) sorts before a start: touching intervals do not overlap
        now += step
        best = max(best, now)
    return best


# --- inputs ---------------------------------------------------------------------------------------------------------


def default_texts() -> list[str]:
    return parse_texts((importlib.resources.files("omni") / "bench_texts.txt").read_text(encoding="utf-8"))


def parse_texts(content: str) -> list[str]:
    """One text per non-empty line."""
    return [line.strip() for line in content.splitlines() if line.strip()]


def parse_meta_lst(content: str) -> list[str]:
    """Seed-TTS style `id|prompt_text|prompt_wav|text` lines: the text to speak is the last field."""
    texts = []
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 4 or not fields[-1].strip():
            raise ValueError(f"meta.lst line {number}: expected id|prompt_text|prompt_wav|text, got {line!r}")
        texts.append(fields[-1].strip())
    return texts


def wav_data_uri(path: Path) -> str:
    return "data:audio/wav;base64," + base64.b64encode(path.read_bytes()).decode()


@dataclass
class BenchConfig:
    url: str  # the gateway's base URL, e.g. http://127.0.0.1:8000
    texts: list[str]
    concurrency: list[int] = field(default_factory=lambda: [1])
    rates: list[float] = field(default_factory=list)  # open loop when non-empty: one level per rate
    requests: int = 0  # per level; 0: 4 x concurrency (at least 8) unless duration_s is set
    duration_s: float = 0.0  # per level: stop starting requests after this long
    voice: str | None = None
    model: str | None = None
    max_new_tokens: int | None = None
    ignore_eos: bool = False  # fixed output length: every request yields max_new_tokens - 1 frames
    seed: int | None = None  # shuffles the text order and gives request i the server seed seed + i
    ref_audio: str | None = None  # data: URI for Base models (x-vector-only cloning)
    timeout_s: float = 600.0
    progress: bool = True
    processes: int = 1  # client processes per level (1: this process; more when one Python process is the limit)
    # A second underrun figure for a player that starts this long after the first audio (a jitter buffer): it tells
    # short jitter in the first chunks from real starvation. The first figure (no buffer) stays the strict one.
    playout_buffer_ms: float = 100.0
    # Open each client's connections (one GET /live per stream of a closed loop, one for an open loop) before the
    # level's clock starts. Otherwise a client process's first requests wait for its own start-up (tens of ms on its
    # first request) and for each other's connection set-up in its one event loop, which users, each on their own
    # client, do not; the opening wave's time to first audio then includes the load generator's queue.
    warm_connections: bool = False


def request_body(config: BenchConfig, index: int, texts: list[str]) -> dict:
    body: dict = {
        "input": texts[index % len(texts)],
        "stream": True,
        "stream_format": "audio",
        "response_format": "pcm",
    }
    optional = {"voice": config.voice, "model": config.model, "max_new_tokens": config.max_new_tokens}
    body.update({k: v for k, v in optional.items() if v is not None})
    if config.ignore_eos:
        body["ignore_eos"] = True
    if config.seed is not None:
        body["seed"] = config.seed + index
    if config.ref_audio is not None:
        body.update(ref_audio=config.ref_audio, x_vector_only_mode=True)
    return body


# --- running --------------------------------------------------------------------------------------------------------


async def one_request(
    client: httpx.AsyncClient, url: str, body: dict, index: int, level_start: float, buffer_s: float = 0.0
) -> RequestResult:
    start = time.perf_counter()
    result = RequestResult(index=index, status="", ok=False, start_s=start - level_start, start_epoch_s=time.time())
    arrivals: list[float] = []
    durations: list[float] = []

    async def trace(event: str, info: dict) -> None:  # httpcore's events for this request, as they happen
        if event == "connection.connect_tcp.started":
            result.new_connection = True
        elif event == "http11.send_request_headers.started":
            result.write_start_s = time.perf_counter() - start

    try:
        async with client.stream("POST", url, json=body, extensions={"trace": trace}) as response:
            result.status = str(response.status_code)
            result.request_id = response.headers.get("x-request-id", "")
            if response.status_code != 200:
                result.error = (await response.aread()).decode(errors="replace")[:500]
                return result
            async for data in response.aiter_raw():
                if data:
                    arrivals.append(time.perf_counter() - start)
                    durations.append(len(data) / BYTES_PER_SECOND)
    except httpx.HTTPError as exc:  # connection refused, truncated stream, timeout
        result.status = f"error:{type(exc).__name__}"
        result.error = str(exc)[:500]
        return result
    result.total_s = time.perf_counter() - start
    result.audio_s = sum(durations)
    if not arrivals:
        result.status, result.error = "empty", "the stream carried no audio"
        return result
    result.ok = True
    result.ttfa_s = arrivals[0]
    result.rtf = result.total_s / result.audio_s
    result.underrun_s = underrun_seconds(arrivals, durations)
    result.underrun_buffered_s = underrun_seconds(arrivals, durations, buffer_s)
    result.first_gap_at_s = first_gap_at(arrivals, durations)
    return result


class Progress:
    """A one-line stderr progress report, rewritten in place."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self.done = self.failed = 0
        self.start = time.perf_counter()

    def update(self, result: RequestResult) -> None:
        self.done += 1
        self.failed += not result.ok
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if self.total:
            width = 30
            filled = int(width * self.done / self.total)
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
        else:
            bar = f"{self.done} done"
        print(f"\r{self.label} {bar} failed {self.failed} {elapsed:6.1f}s", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print(file=sys.stderr, flush=True)


def level_request_count(config: BenchConfig, concurrency: int) -> int | None:
    if config.requests > 0:
        return config.requests
    if config.duration_s > 0:
        return None  # as many as fit in the duration
    return max(8, 4 * concurrency)


def open_loop_request_count(config: BenchConfig, rate: float) -> int | None:
    if config.requests > 0:
        return config.requests
    return None if config.duration_s > 0 else max(8, math.ceil(4 * rate))


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` in `parts` integers that differ by at most one, the larger ones first."""
    if parts < 1 or total < 0:
        raise ValueError(f"cannot split {total} into {parts} parts")
    return [total // parts + (k < total % parts) for k in range(parts)]


@dataclass(frozen=True)
class Share:
    """One client's part of a level: request indices start, start + stride, ... (`count` of them; None = until
    the level's duration ends), kept `concurrency` in flight (closed loop) or started at `rate` per second (open)."""

    start: int
    stride: int
    count: int | None
    concurrency: int = 0
    rate: float = 0.0

    def indices(self):
        k = 0
        while self.count is None or k < self.count:
            yield self.start + k * self.stride
            k += 1


def split_level(total: int | None, processes: int, concurrency: int = 0, rate: float = 0.0) -> list[Share]:
    """A level's shares for `processes` clients: concurrency c/N (remainder spread; never fewer than one stream per
    client, so at most c clients) or rate/N, and interleaved request indices, so together they send exactly the
    requests one client would (the same bodies and seeds)."""
    if concurrency > 0:
        processes = min(processes, concurrency)
    counts = split_evenly(total, processes) if total is not None else [None] * processes
    streams = split_evenly(concurrency, processes) if concurrency > 0 else [0] * processes
    return [Share(k, processes, counts[k], streams[k], rate / processes) for k in range(processes)]


def merge_results(parts: list[list[RequestResult]]) -> list[RequestResult]:
    """The clients' per-request results as one level, by request index (each index exactly once)."""
    merged = sorted((r for part in parts for r in part), key=lambda r: r.index)
    indices = [r.index for r in merged]
    if len(set(indices)) != len(indices):
        raise ValueError("a request index was reported by more than one client")
    return merged


async def run_share(
    config: BenchConfig,
    share: Share,
    texts: list[str],
    on_result: Callable[[RequestResult], None],
    gap_seed: int | None = None,
    before_start: Callable[[], None] | None = None,
) -> tuple[list[RequestResult], float]:
    """One client's requests: closed loop when `share.concurrency` > 0, else open loop at `share.rate`.
    `on_result(result)` is called as each request ends; `before_start()` (blocking) after the connections are warm,
    just before the clock starts. Returns the results (by index) and the wall time."""
    url = config.url.rstrip("/") + "/v1/audio/speech"
    results: list[RequestResult] = []
    indices = share.indices()
    if share.concurrency > 0:
        limits = httpx.Limits(max_connections=share.concurrency, max_keepalive_connections=share.concurrency)
    else:
        limits = httpx.Limits(max_connections=None)
    async with httpx.AsyncClient(timeout=config.timeout_s, limits=limits) as client:
        if config.warm_connections:  # all at once: each GET takes a connection of its own, kept alive for the level
            live = config.url.rstrip("/") + "/live"
            await asyncio.gather(*(client.get(live) for _ in range(max(1, share.concurrency))))
        if before_start is not None:
            before_start()
        level_start = time.perf_counter()

        async def send(index: int) -> None:
            body = request_body(config, index, texts)
            result = await one_request(client, url, body, index, level_start, config.playout_buffer_ms / 1000.0)
            results.append(result)
            on_result(result)

        if share.concurrency > 0:

            async def worker() -> None:
                for index in indices:  # one iterator shared by the workers: each index is sent once
                    if config.duration_s > 0 and time.perf_counter() - level_start >= config.duration_s:
                        return
                    await send(index)

            await asyncio.gather(*(worker() for _ in range(share.concurrency)))
        else:
            # Requests start at Poisson arrival times (exponential gaps of mean 1/rate), whatever is still in flight.
            gaps = random.Random(gap_seed)
            tasks: list[asyncio.Task] = []
            arrival = 0.0
            for index in indices:
                if config.duration_s > 0 and arrival >= config.duration_s:
                    break
                await asyncio.sleep(max(0.0, level_start + arrival - time.perf_counter()))
                tasks.append(asyncio.create_task(send(index)))
                arrival += gaps.expovariate(share.rate)
            await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - level_start
    return sorted(results, key=lambda r: r.index), elapsed


async def run_closed_loop(config: BenchConfig, concurrency: int, texts: list[str]) -> tuple[list[RequestResult], float]:
    total = level_request_count(config, concurrency)
    progress = Progress(f"concurrency {concurrency}", total, config.progress)
    results = await run_share(config, Share(0, 1, total, concurrency=concurrency), texts, progress.update)
    progress.close()
    return results


async def run_open_loop(config: BenchConfig, rate: float, texts: list[str]) -> tuple[list[RequestResult], float]:
    total = open_loop_request_count(config, rate)
    progress = Progress(f"rate {rate:g}/s", total, config.progress)
    results = await run_share(config, Share(0, 1, total, rate=rate), texts, progress.update, gap_seed=config.seed)
    progress.close()
    return results


# --- several client processes ---------------------------------------------------------------------------------------


def _client_process(config: BenchConfig, share: Share, texts: list[str], gap_seed: int | None, queue, go) -> None:
    """A spawned client: says it is ready (its connections warm, if asked), waits for the common start, then sends
    each result as it ends."""
    cpu_at_start = 0.0

    def ready_then_wait() -> None:
        nonlocal cpu_at_start
        queue.put(("ready", None))
        go.wait()
        cpu_at_start = time.process_time()

    def send_result(result: RequestResult) -> None:
        queue.put(("result", result))

    try:
        asyncio.run(run_share(config, share, texts, send_result, gap_seed, ready_then_wait))
        queue.put(("done", time.process_time() - cpu_at_start))  # this client's CPU seconds over the level
    except BaseException:  # the parent reports it; a silent exit would look like a hang
        import traceback

        queue.put(("error", traceback.format_exc()))


async def run_level_in_processes(
    config: BenchConfig, shares: list[Share], texts: list[str], progress: Progress, start_timeout_s: float = 300.0
) -> tuple[list[RequestResult], float, float]:
    """Each share in its own spawned process; the level's wall time runs from the common start (every client
    started and connected-ready) to the last client's end. Results come back per request, as they end. Returns the
    results, the wall time and the clients' CPU seconds over the level (their start-up excluded)."""
    import multiprocessing
    import queue as queue_module

    context = multiprocessing.get_context("spawn")
    queue, go = context.Queue(), context.Event()
    processes = []
    for k, share in enumerate(shares):
        gap_seed = None if config.seed is None else config.seed + 7919 * k
        processes.append(
            context.Process(
                target=_client_process, args=(config, share, texts, gap_seed, queue, go), daemon=True, name=f"bench{k}"
            )
        )

    async def receive(until: float | None) -> tuple[str, object]:
        while True:
            try:
                return await asyncio.to_thread(queue.get, True, 0.5)
            except queue_module.Empty:
                dead = [p for p in processes if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"bench client {dead[0].name} died with exit code {dead[0].exitcode}") from None
                if until is not None and time.monotonic() > until:
                    raise TimeoutError(f"bench clients not ready after {start_timeout_s:g} s") from None

    parts: list[list[RequestResult]] = [[]]
    try:
        for process in processes:
            process.start()
        until = time.monotonic() + start_timeout_s
        for _ in processes:
            kind, payload = await receive(until)
            if kind == "error":
                raise RuntimeError(f"a bench client failed:\n{payload}")
        go.set()
        level_start = time.perf_counter()
        running, cpu_s = len(processes), 0.0
        while running:
            kind, payload = await receive(None)
            if kind == "result":
                parts[0].append(payload)
                progress.update(payload)
            elif kind == "done":
                running -= 1
                cpu_s += payload
            else:
                raise RuntimeError(f"a bench client failed:\n{payload}")
        elapsed = time.perf_counter() - level_start
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join(10)
    return merge_results(parts), elapsed, cpu_s


async def run_level(config: BenchConfig, open_loop: bool, value: float, texts: list[str]):
    """One level with `config.processes` clients (1: in this process): its results, wall time and the clients' CPU
    seconds (a client near one busy core per process is the benchmark's own limit, not the server's)."""
    if config.processes < 1:
        raise ValueError(f"processes must be >= 1, got {config.processes}")
    if config.processes == 1:
        cpu = time.process_time()
        run = run_open_loop(config, value, texts) if open_loop else run_closed_loop(config, int(value), texts)
        results, elapsed = await run
        return results, elapsed, time.process_time() - cpu
    if open_loop:
        total, label = open_loop_request_count(config, value), f"rate {value:g}/s"
        shares = split_level(total, config.processes, rate=value)
    else:
        total, label = level_request_count(config, int(value)), f"concurrency {int(value)}"
        shares = split_level(total, config.processes, concurrency=int(value))
    progress = Progress(f"{label} ({len(shares)} processes)", total, config.progress)
    try:
        return await run_level_in_processes(config, shares, texts, progress)
    finally:
        progress.close()


async def run_bench(config: BenchConfig) -> dict:
    """Every level in turn; returns the JSON-ready report."""
    if not config.texts:
        raise ValueError("no texts to send")
    texts = list(config.texts)
    if config.seed is not None:
        random.Random(config.seed).shuffle(texts)
    open_loop = bool(config.rates)
    levels = []
    for value in config.rates if open_loop else config.concurrency:
        results, elapsed, client_cpu_s = await run_level(
            config, open_loop, float(value) if open_loop else int(value), texts
        )
        summary = summarize(results, elapsed, first_wave=0 if open_loop else int(value))
        summary["client_cpu_cores"] = client_cpu_s / elapsed if elapsed > 0 else math.nan
        summary["rate" if open_loop else "concurrency"] = value
        summary["results"] = [asdict(r) for r in results]
        levels.append(summary)
    settings = asdict(config)
    settings.pop("texts")
    settings["ref_audio"] = config.ref_audio is not None
    settings["text_count"] = len(config.texts)
    return {"url": config.url, "mode": "open" if open_loop else "closed", "settings": settings, "levels": levels}


# --- reporting ------------------------------------------------------------------------------------------------------


def format_table(report: dict) -> str:
    key = "rate" if report["mode"] == "open" else "concurrency"
    header = (
        f"{key:>11} {'ok':>5} {'fail':>5} {'req/s':>7} {'audio-s/s':>9} {'ttfa p50':>9} {'p90':>7} {'p99':>7} "
        f"{'rtf p50':>8} {'p90':>6} {'underrun s':>10} {'n underrun':>10} {'n +buffer':>9}"
    )
    rows = [header, "-" * len(header)]
    for level in report["levels"]:
        rows.append(
            f"{level[key]:>11g} {level['succeeded']:>5} {level['failed']:>5} {level['requests_per_s']:>7.2f} "
            f"{level['audio_s_per_s']:>9.2f} {level['ttfa_p50_s']:>9.3f} {level['ttfa_p90_s']:>7.3f} "
            f"{level['ttfa_p99_s']:>7.3f} {level['rtf_p50']:>8.3f} {level['rtf_p90']:>6.3f} "
            f"{level['underrun_total_s']:>10.2f} {level['requests_with_underrun']:>10} "
            f"{level['requests_with_underrun_buffered']:>9}"
        )
        if level["failures"]:
            rows.append(f"{'':>11} failures: {level['failures']}")
            for status, message in level["failure_examples"].items():
                rows.append(f"{'':>11} {status}: {message[:200]}")
    return "\n".join(rows)


def write_plot(report: dict, path: Path) -> None:
    """Left: CDF of time to first audio per level; right: throughput against concurrency (or offered rate)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = "rate" if report["mode"] == "open" else "concurrency"
    figure, (cdf, throughput) = plt.subplots(1, 2, figsize=(12, 4.5))
    for level in report["levels"]:
        ttfa = sorted(r["ttfa_s"] for r in level["results"] if r["ok"])
        if ttfa:
            fractions = [0.0] + [(i + 1) / len(ttfa) for i in range(len(ttfa))]
            cdf.step([ttfa[0], *ttfa], fractions, where="post", label=f"{key} {level[key]:g}")
    cdf.set_xlabel("time to first audio (s)")
    cdf.set_ylabel("fraction of requests")
    cdf.set_title("Time to first audio, CDF")
    cdf.set_ylim(0, 1.02)
    cdf.grid(alpha=0.3)
    cdf.legend()

    xs = [level[key] for level in report["levels"]]
    throughput.plot(xs, [level["audio_s_per_s"] for level in report["levels"]], "o-", label="audio-s/s")
    throughput.set_xlabel("concurrency" if key == "concurrency" else "offered rate (req/s)")
    throughput.set_ylabel("audio seconds per second")
    requests = throughput.twinx()
    requests.plot(xs, [level["requests_per_s"] for level in report["levels"]], "s--", color="tab:orange", label="req/s")
    requests.set_ylabel("requests per second", color="tab:orange")
    if len(xs) > 1 and min(xs) > 0 and max(xs) / min(xs) >= 8:  # sweeps like 1, 16, 64, 256
        throughput.set_xscale("log", base=2)
    throughput.set_xticks(xs, [f"{x:g}" for x in xs])
    throughput.set_title("Throughput")
    throughput.grid(alpha=0.3)
    lines = throughput.get_lines() + requests.get_lines()
    throughput.legend(lines, [line.get_label() for line in lines], loc="upper left")
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=100)
    plt.close(figure)
