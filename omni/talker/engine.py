"""The talker engine: continuous batching of many requests over the runner's slots.

One asyncio task owns the runner; each step runs in a one-thread executor so the event loop keeps serving
RPCs. Handlers `submit` a request (it waits in a bounded queue), read `request.outputs` (Chunk... then one
Finished) and `cancel` it when the call ends early. They never touch tensors.

A step:
  1. drop requests whose deadline passed (waiting or in a slot),
  2. admit waiting requests into free slots and give prefilling requests positions up to `prefill_budget`
     (chunked prefill: a long prompt takes several steps and never stalls the decodes of the others); with a
     `step_token_budget`, up to that many positions less one per decoding row when more (a burst of prompts into a
     lightly loaded engine is admitted in fewer, larger forwards; a full engine keeps `prefill_budget`),
  3. one batched `decode_step` over every slot that finished its prefill, this step's prefill included (it runs
     first on the same device stream, so a new stream's first frame comes out of the step that drew its first id),
     one [B, 18] tensor to the host,
  4. hand each request its frame; a request emits a chunk once it holds as many frames as its plan says
     (1, then the ramp, then 15 by default) and flushes the rest with `last` when it stops.

Asynchronous scheduling (`async_scheduling`, off by default): step N+1 is planned and queued on the device before
step N's results are read back, so the GPU runs N+1 while the event loop hands out N's frames and serves its RPCs
(on an H200 that host time was ~2 ms of every ~20 ms step, with the GPU idle). The plan of N+1 cannot know who
stopped in N, so a request that stopped there is stepped once more and that frame is dropped. That extra step stays
inside the slot: a request stops at the latest when max_new_tokens ids were drawn, and one more step writes K/V
position prompt + max_new_tokens - 1, which `check_fits` keeps below max_len. Prefill progress is counted when a
chunk is planned, not when its step is read back, so the next plan neither repeats it nor waits for it.
`async_scheduling_max_streams` asks for it only while the engine holds at most that many streams: on a GPU shared
with the codec a light load leaves the codec time to spare, while a heavy one needs every turn the talker leaves it
(run 111). A synchronous step is planned once the step in flight, if any, was read back: never more than one is.

Slot hygiene: a cancelled or finished request gives its slot back at once (in the event-loop thread). A new
owner is admitted only between steps and `begin_prefill_batch` rewrites every per-slot tensor; device work runs in
launch order on one stream, so the new owner's prefill follows every step queued for the old one. A step's results
go to the request objects captured when the step was planned, which drop them once done. So nothing of one
request reaches another.

KV memory: per-slot contiguous caches of `max_len` positions (the runner's KVCache). A stream's memory is
fixed (layers x max_len x kv_heads x head_dim x 2), so admission never fails midway; paging would only pay
off with many short streams on a long max_len.
"""

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import torch

from omni.device import HostCopy, to_device
from omni.services.common.engine_task import stop_engine_task
from omni.services.common.logging import log_request
from omni.services.talker.metrics import TalkerMetrics
from omni.talker.cuda_graphs import PrefillGraphs, TalkerGraphs
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import TalkerPrompt
from omni.talker.sampling import SamplingParams
from omni.talker.step_profile import StepProfiler

log = logging.getLogger("omni.talker.engine")

# Why a request stopped (the metrics' outcome label and the summary's reason).
EOS, MAX_NEW_TOKENS, CANCELLED, DEADLINE, ABORTED = "eos", "max_new_tokens", "cancelled", "deadline", "aborted"


class QueueFull(Exception):
    """The wait queue is full; `retry_after_s` is the hint for the client."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class EngineClosed(Exception):
    """The engine no longer admits requests (shutting down)."""


@dataclass(frozen=True)
class ChunkPlan:
    """Chunk sizes in frames: `initial`, then each of `ramp`, then `steady` for the rest. `initial` 0 leaves the
    first chunk to the engine's `FirstChunkSizing`."""

    initial: int = 1
    steady: int = 15
    ramp: tuple[int, ...] = ()

    def size(self, index: int, engine_first: int = 0) -> int:
        """Frames in chunk number `index` (0-based); `engine_first` is the engine's size for a first chunk left to
        it."""
        if index == 0:
            return self.initial or engine_first
        if index - 1 < len(self.ramp):
            return self.ramp[index - 1]
        return self.steady


@dataclass
class Chunk:
    """Frames [n, 16] (int64) starting at frame `first_frame`; `last` marks the final chunk."""

    codes: np.ndarray
    first_frame: int
    last: bool
    compute_ms: float  # duration of the step that completed the chunk


@dataclass
class Finished:
    """The final item of a request's outputs."""

    reason: str
    num_frames: int
    num_chunks: int
    prompt_tokens: int
    queue_ms: float
    first_chunk_ms: float
    total_ms: float


@dataclass(eq=False)
class Request:
    """One generation: its inputs, its slot while it has one, and the queue its output arrives on."""

    request_id: str
    prompt: TalkerPrompt
    params: SamplingParams
    plan: ChunkPlan = ChunkPlan()
    deadline: float | None = None  # time.monotonic() by which it must be done
    outputs: asyncio.Queue = field(default_factory=asyncio.Queue)
    arrived: float = field(default_factory=time.perf_counter)
    admitted: float = 0.0  # time.perf_counter() when it got its slot
    slot: int | None = None
    prefilled: int = 0  # prompt positions run so far
    embeddings: torch.Tensor | None = None  # [L, H], between the first and the last prefill chunk
    buffer: list[np.ndarray] = field(default_factory=list)  # frames not yet sent
    frames_sent: int = 0
    chunks_sent: int = 0
    play_start: float = 0.0  # when its first chunk left (the engine's clock): a listener's playback starts then
    flush_by: float = math.inf  # from then held frames go out early (ChunkLead); inf: at the planned sizes
    queue_ms: float = 0.0
    first_chunk_ms: float = 0.0
    done: bool = False

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def decoding(self) -> bool:
        return self.slot is not None and self.prefilled == len(self.prompt)


@dataclass(frozen=True)
class PrefillCoalescing:
    """Hold new prompts while streams decode, so that several share one prefill forward.

    A prefill forward costs far less per prompt in a batch (1.7B talker on an H200: 5.4 ms for 1 prompt, 12.5 ms for
    16 with prefill graphs; 24 vs 31 ms eager) and every decoding stream waits for it, so under load many small
    prefills cost the decoders more than a few batched ones. A prompt is held until `min_batch` are ready or the
    oldest has waited `max_wait_ms`, and never when nothing decodes (a lone request starts at once) or a long prompt
    is part-way through.
    """

    min_batch: int = 1  # 1: never hold
    max_wait_ms: float = 0.0

    def hold(self, prefilling: list["Request"], decoding: bool, now: float) -> bool:
        if self.min_batch <= 1 or not decoding or not prefilling or len(prefilling) >= self.min_batch:
            return False
        if any(r.prefilled > 0 for r in prefilling):
            return False
        oldest = min(r.admitted for r in prefilling)
        return (now - oldest) * 1000.0 < self.max_wait_ms


@dataclass(frozen=True)
class FirstChunkSizing:
    """The first chunk's frames for a request that leaves them to the engine, picked when they are due: a request
    holding `frames` frames sends them unless the engine is busy, then it waits for `busy_frames`.

    Every later chunk must arrive before the audio ahead of it has played. Chunk k's slack is 80 ms x (frames before
    it) - (frames generated after the first chunk, up to its last) x step - codec jitter, so one more frame in the
    first chunk gives every later chunk 80 ms more for one more step of time to first audio. That pays only when
    steps are slow, i.e. when the talker holds many streams (one H200, 1.7B, run 60: at 512 streams 3 frames instead
    of 2 cut requests with a gap from 24% to 1%; at 128, where 2 frames have no gaps, they cost TTFA p99 218 -> 242
    ms). The engine is busy while it holds at least `busy_streams` requests (in slots or waiting): the load its steps
    will carry while the request's next chunks are made.
    """

    frames: int = 2
    busy_frames: int = 2
    busy_streams: int = 0  # 0: never busy

    def frames_for(self, held: int) -> int:
        return self.busy_frames if 0 < self.busy_streams <= held else self.frames


@dataclass(frozen=True)
class ChunkLead:
    """Send held frames before the planned chunk size when the stream's listener would otherwise run short.

    A listener who starts playing when the first chunk leaves the talker has, at time t, `frames sent x frame_ms -
    (t - first chunk)` of audio left: its lead. A chunk is sent once it holds all its planned frames, so with slow
    steps the lead can run out while a large chunk fills (one H200, 800 requests open at once: 44 ms steps and 89% of
    the requests played with a gap, run 62; by the arithmetic of a 3-frame first chunk and the 2/4/8/15 ramp, the
    first 15-frame chunk falls due with ~84 ms of lead, under one 86 ms codec tick). With `min_lead_ms`, the frames
    held go out as soon as the lead falls under it (at least `min_frames` of them), so every chunk leaves with about
    min_lead_ms of audio still ahead of the listener. Frames never change, only where chunks break; a stream that
    keeps ahead keeps its planned sizes. Only while frames come faster than they play (steps under frame_ms apart):
    slower, no chunking keeps a listener fed, and chunks of 2 frames would only add codec work to an overloaded
    device.
    """

    min_lead_ms: float = 0.0  # 0: planned sizes only
    frame_ms: float = 80.0  # audio per frame (12.5 Hz codec)
    min_frames: int = 2  # a chunk of 1 frame costs the codec a row for 80 ms of audio

    def flush_by(self, play_start: float, frames_sent: int) -> float:
        """When (engine clock, s) the lead of a stream that started playing at `play_start` falls under the floor."""
        if self.min_lead_ms <= 0:
            return math.inf
        return play_start + (frames_sent * self.frame_ms - self.min_lead_ms) / 1000.0


@dataclass
class _StepPlan:
    # (request, embeddings or None for a prompt's first chunk, start, end): prompt positions to run. The embeddings
    # are taken when the step is planned, so a cancel that clears the request's cannot reach a step in flight.
    prefills: list[tuple[Request, torch.Tensor | None, int, int]]
    decodes: list[Request]  # requests in the batched decode step, in slot order of the batch


@dataclass
class _Launched:
    """A step whose device work is queued: its results reach the host in `results` (decoded rows, then one EOS flag
    per prompt it completed), readable once `results.wait()` returns."""

    plan: _StepPlan
    results: HostCopy | None
    rows: int  # decoded rows in `results`
    prefill_timer: tuple[torch.cuda.Event, torch.cuda.Event] | float | None  # CUDA events, or host ms on CPU


class TalkerEngine:
    def __init__(
        self,
        runner: TalkerRunner,
        max_queue: int,
        prefill_budget: int = 512,
        retry_after_s: float = 1.0,
        metrics: TalkerMetrics | None = None,
        graphs: TalkerGraphs | None = None,
        coalescing: PrefillCoalescing = PrefillCoalescing(),
        prefill_graphs: PrefillGraphs | None = None,
        async_scheduling: bool = False,
        decode_in_prefill_step: bool = True,
        trace_steps: bool = False,
        step_token_budget: int = 0,
        first_chunk: FirstChunkSizing = FirstChunkSizing(),
        lead: ChunkLead = ChunkLead(),
        clock: Callable[[], float] = time.perf_counter,
        async_scheduling_max_streams: int = 0,
    ) -> None:
        """`graphs`: captured decode steps of `runner` (CUDA); without them every step runs eagerly.
        `coalescing`: when to hold new prompts so that they share a prefill forward (default: never).
        `prefill_graphs`: captured prefill forwards (CUDA); without them prefill runs eagerly.
        `async_scheduling`: queue each step before reading the previous one back (see the module docstring).
        `decode_in_prefill_step`: a prompt's first frame is decoded in the step that completes its prefill, not in the
        next one. The step is never wasted: the first id cannot end a stream (EOS is blocked until min_new_tokens >= 1
        ids were drawn, and max_new_tokens >= 2); were it to, `_deliver` would drop that frame, as under async
        scheduling.
        `trace_steps`: log one `talker.step` line per step read back (prompts and positions prefilled, rows decoded,
        its times, and the event loop's time before it).
        `step_token_budget`: positions per step, decoded rows included, as vLLM's max_num_batched_tokens: a step
        prefills up to max(prefill_budget, step_token_budget - rows decoding). 0 keeps `prefill_budget` always.
        `first_chunk`: the first chunk's frames for requests whose plan leaves them to the engine (`initial` 0).
        `lead`: when held frames go out before their chunk is full. `clock`: the time it reads once per step (tests
        drive it). `async_scheduling_max_streams`: without `async_scheduling`, still queue each step ahead while at
        most this many streams hold a slot (0: never)."""
        if max_queue < 0 or prefill_budget < 1 or step_token_budget < 0 or async_scheduling_max_streams < 0:
            raise ValueError(
                f"need max_queue >= 0, prefill_budget >= 1, step_token_budget >= 0 and async_scheduling_max_streams "
                f">= 0, got {max_queue}, {prefill_budget}, {step_token_budget}, {async_scheduling_max_streams}"
            )
        self.runner = runner
        self.decode_step = graphs.decode_step if graphs is not None else runner.decode_step
        self.prefill_batch = prefill_graphs.prefill if prefill_graphs is not None else runner.prefill_batch
        self.max_streams = runner.num_slots
        self.max_len = runner.max_len
        self.max_queue = max_queue
        self.prefill_budget = prefill_budget
        self.step_token_budget = step_token_budget
        self.coalescing = coalescing
        self.first_chunk = first_chunk
        self.lead = lead
        self.clock = clock
        self._last_delivery = -math.inf  # the clock at the last step that handed out frames
        self.async_scheduling = async_scheduling
        self.async_scheduling_max_streams = async_scheduling_max_streams
        self.decode_in_prefill_step = decode_in_prefill_step
        self.trace_steps = trace_steps
        self.retry_after_s = retry_after_s
        self.metrics = metrics or TalkerMetrics()
        self.free = list(reversed(range(runner.num_slots)))  # pop() takes the lowest slot first
        self.waiting: deque[Request] = deque()
        self.slots: dict[int, Request] = {}  # slot -> request (prefilling or decoding)
        self.accepting = True
        self.wake = asyncio.Event()
        self.idle = asyncio.Event()
        self.idle.set()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="talker-engine")
        self.task: asyncio.Task | None = None
        self.metrics.capacity.set(self.max_streams)
        self.profiler = StepProfiler()  # off unless OMNI_TALKER_PROFILE_PREFILL_STEPS names steps
        self._last_step_end = time.perf_counter()

    # ---- handler side (event-loop thread) ----

    def fits(self, prompt_tokens: int, max_new_tokens: int) -> bool:
        """Whether a request of this prompt and budget fits a slot."""
        return prompt_tokens + max_new_tokens <= self.max_len

    def check_fits(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """A request that could never fit a slot is refused up front (ValueError)."""
        if not self.fits(prompt_tokens, max_new_tokens):
            raise ValueError(
                f"prompt length {prompt_tokens} + max_new_tokens {max_new_tokens} exceeds the context limit "
                f"{self.max_len}"
            )

    def submit(self, request: Request) -> Request:
        """Queue a request; raises EngineClosed, QueueFull or ValueError (too long)."""
        if not self.accepting:
            raise EngineClosed("the talker is shutting down")
        self.check_fits(request.prompt_tokens, request.params.max_new_tokens)
        # Waiting requests take the free slots first; up to max_queue more may wait for one.
        if len(self.waiting) >= len(self.free) + self.max_queue:
            raise QueueFull(f"the wait queue is full ({len(self.waiting)} waiting)", self.retry_after_s)
        self.waiting.append(request)
        self._update_gauges()
        self.idle.clear()
        self.wake.set()
        return request

    def cancel(self, request: Request, reason: str = CANCELLED) -> None:
        """End a request early (client gone, deadline, shutdown): its slot is free at once."""
        if request.done:
            return
        if request.slot is None:
            self.waiting.remove(request)
        self._finish(request, reason)

    # ---- engine task ----

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="talker-engine")

    async def drain(self, timeout_s: float) -> None:
        """Stop admitting; let in-flight requests finish for up to `timeout_s`, then abort the rest."""
        self.accepting = False
        try:
            await asyncio.wait_for(self.idle.wait(), timeout_s)
        except TimeoutError:
            pass
        for request in [*self.waiting, *self.slots.values()]:
            self.cancel(request, ABORTED)

    async def stop(self) -> None:
        self.accepting = False
        await stop_engine_task(self.task, self.executor)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        in_flight: _Launched | None = None  # async scheduling: the step queued last, not yet read back
        while True:
            self._expire()
            self._admit()
            ahead = self._queue_ahead()
            # A synchronous step is planned once the step in flight (queued ahead while the load allowed it) is back.
            plan = self._plan() if ahead or in_flight is None else None
            if plan is not None and not plan.prefills and not plan.decodes:
                plan = None
            if plan is None and in_flight is None:
                self.wake.clear()
                await self.wake.wait()
                continue
            start = time.perf_counter()
            try:
                in_flight, done, results = await loop.run_in_executor(
                    self.executor, self._advance, plan, in_flight, ahead
                )
            except Exception:  # a failed step ends the requests in it, not the service
                log.exception("talker step failed")
                failed = [p for p in (plan, in_flight.plan if in_flight else None) if p is not None]
                in_flight = None
                for request in [r for p in failed for r in [*(r for r, *_ in p.prefills), *p.decodes]]:
                    if not request.done:
                        request.outputs.put_nowait(RuntimeError("the talker step failed"))
                        self._finish(request, "error", notify=False)
                continue
            if done is None:
                continue
            step_ms = (time.perf_counter() - start) * 1000.0
            decoded, prefill_eos, prefill_ms, compute_ms = results
            self._observe_step(done.plan, step_ms, prefill_ms, compute_ms)
            if self.trace_steps:
                self._trace(done.plan, start, step_ms, prefill_ms, compute_ms)
            self._deliver(done.plan, decoded, prefill_eos, step_ms)
            self._last_step_end = time.perf_counter()

    def _queue_ahead(self) -> bool:
        """Whether the next step is queued before the one in flight is read back (asynchronous scheduling)."""
        return self.async_scheduling or 0 < len(self.slots) <= self.async_scheduling_max_streams

    def _advance(
        self, plan: _StepPlan | None, in_flight: _Launched | None, ahead: bool
    ) -> tuple[_Launched | None, _Launched | None, tuple]:
        """Engine thread: queue `plan`'s step, then read one step back: the one queued before it (`ahead`, so the
        device has the new step to run while the host delivers the old, or one left in flight), else this one.
        Returns (the step now in flight, the step read back, its results as `_collect` gives them)."""
        began = time.perf_counter()
        launched = self._launch(plan) if plan is not None else None
        if in_flight is None and not ahead:
            in_flight, launched = launched, None
        if in_flight is None:
            return launched, None, ()
        decoded, prefill_eos, prefill_ms = self._collect(in_flight)
        return launched, in_flight, (decoded, prefill_eos, prefill_ms, (time.perf_counter() - began) * 1000.0)

    def _expire(self) -> None:
        now = time.monotonic()
        for request in [*self.waiting, *self.slots.values()]:
            if request.deadline is not None and now >= request.deadline:
                self.cancel(request, DEADLINE)

    def _admit(self) -> None:
        while self.free and self.waiting:
            request = self.waiting.popleft()
            request.slot = self.free.pop()
            request.admitted = time.perf_counter()
            request.queue_ms = (request.admitted - request.arrived) * 1000.0
            self.slots[request.slot] = request
            self.metrics.queue_wait_ms.observe(request.queue_ms)
        self._update_gauges()

    def _plan(self) -> _StepPlan:
        """Prefill chunks (oldest first, up to the token budget, unless coalescing holds them) and the decode batch."""
        decodes = [r for r in self.slots.values() if r.decoding]
        prefilling = sorted((r for r in self.slots.values() if not r.decoding), key=lambda r: r.arrived)
        if self.coalescing.hold(prefilling, bool(decodes), time.perf_counter()):
            prefilling = []
        budget = self.prefill_positions(len(decodes))
        prefills = []
        for request in prefilling:
            if budget == 0:
                break
            start, end = request.prefilled, min(request.prefilled + budget, len(request.prompt))
            prefills.append((request, request.embeddings, start, end))
            budget -= end - start
            request.prefilled = end  # counted as planned: the next plan continues after it, or decodes it
            if end == len(request.prompt):
                request.embeddings = None
                if self.decode_in_prefill_step:
                    decodes.append(request)  # `_queue` runs the prefill before the decode step
        return _StepPlan(prefills, decodes)

    def prefill_positions(self, decoding_rows: int) -> int:
        """Prompt positions a step with `decoding_rows` rows already decoding may prefill."""
        return max(self.prefill_budget, self.step_token_budget - decoding_rows)

    def _launch(self, plan: _StepPlan) -> _Launched:
        """Engine thread: queue the plan's prefill chunks and its batched decode step on the device, and the copy of
        their results to the host; nothing here waits for the device (on CPU everything runs here)."""
        if not plan.prefills:
            return self._queue(plan)
        with self.profiler.prefill_step(len(plan.prefills), len(plan.decodes)):
            return self._queue(plan)

    def _queue(self, plan: _StepPlan) -> _Launched:
        runner = self.runner
        on_cuda = runner.device.type == "cuda"
        prefill_timer = None
        completed = []
        if plan.prefills:
            began = time.perf_counter()
            if on_cuda:
                prefill_timer = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                prefill_timer[0].record()
            new = [(request, end) for request, _, start, end in plan.prefills if start == 0]
            embedded = {}
            if new:  # one batched admission: its device calls do not grow with the number of requests
                embeddings = runner.begin_prefill_batch([(r.slot, r.prompt, r.params) for r, _ in new])
                for (request, end), emb in zip(new, embeddings, strict=True):
                    embedded[id(request)] = emb
                    if end < len(request.prompt) and not request.done:
                        request.embeddings = emb  # for the chunks of later steps
            # All of this step's prompt chunks in one forward (one chunk per request, so the slots are distinct).
            chunks = [(r.slot, embedded.get(id(r), emb), start, end) for r, emb, start, end in plan.prefills]
            completed = self.prefill_batch(chunks)
            if on_cuda:
                prefill_timer[1].record()
            else:
                prefill_timer = (time.perf_counter() - began) * 1000.0
        if completed:
            # Whether a prompt's first id ended it. Validated parameters never do (EOS is blocked for the first id and
            # max_new_tokens >= 2); read anyway, so that a request that did would end with no frames. Taken before the
            # decode step, which may step these slots too and set the flag for their next id.
            first_ended = runner.finished[to_device(torch.tensor(completed), runner.device)].to(torch.int64)
        parts = []
        if plan.decodes:
            slots = to_device(torch.tensor([r.slot for r in plan.decodes]), runner.device)
            codes, finished = self.decode_step(slots)
            eos = runner.pending[slots] == runner.eos_id
            rows = torch.cat([codes, finished[:, None].to(codes.dtype), eos[:, None].to(codes.dtype)], 1)
            parts.append(rows.flatten())
        if completed:
            parts.append(first_ended)
        results = HostCopy(torch.cat(parts)) if parts else None
        return _Launched(plan, results, len(plan.decodes), prefill_timer)

    def _collect(self, launched: _Launched) -> tuple[np.ndarray | None, list[bool], float]:
        """Engine thread: wait for a launched step's results; returns its decoded rows [B, groups + 2] (or None),
        the EOS flag of each prompt it completed and its prefill's device time in ms."""
        values = launched.results.wait().numpy() if launched.results is not None else np.zeros(0, np.int64)
        width = self.runner.groups + 2
        decoded = values[: launched.rows * width].reshape(launched.rows, width) if launched.rows else None
        prefill_eos = values[launched.rows * width :].astype(bool).tolist()
        timer = launched.prefill_timer
        prefill_ms = timer[0].elapsed_time(timer[1]) if isinstance(timer, tuple) else (timer or 0.0)
        return decoded, prefill_eos, prefill_ms

    def _observe_step(self, plan: _StepPlan, step_ms: float, prefill_ms: float, compute_ms: float) -> None:
        """Step timing: `step_ms` (event-loop view) minus `compute_ms` (engine thread) is the time the loop took to
        come back to the engine after the step finished, i.e. host work competing with it."""
        m = self.metrics
        m.step_ms.observe(step_ms)
        m.step_compute_ms.observe(compute_ms)
        if plan.prefills:
            m.prefill_ms.observe(prefill_ms)
            m.prefill_batch.observe(len(plan.prefills))

    def _trace(self, plan: _StepPlan, start: float, step_ms: float, prefill_ms: float, compute_ms: float) -> None:
        """One `talker.step` line: what the step ran and how long it and the event loop before it took."""
        positions = sum(end - begin for _, _, begin, end in plan.prefills)
        first_rows = sum(1 for r in plan.decodes if r.frames_sent == 0 and not r.buffer)
        log_request(
            log, "talker.step", prompts=len(plan.prefills), positions=positions, rows=len(plan.decodes),
            first_rows=first_rows, loop_ms=(start - self._last_step_end) * 1000.0, step_ms=step_ms,
            compute_ms=compute_ms, prefill_ms=prefill_ms,
        )  # fmt: skip

    def _deliver(self, plan: _StepPlan, decoded: np.ndarray | None, prefill_eos: list[bool], step_ms: float) -> None:
        """Event-loop thread: count prefilled positions, hand out frames, finish stopped requests (prefill progress
        itself is advanced when a chunk is planned)."""
        m = self.metrics
        # `prefill_eos` has one flag per chunk that completed its prompt, in plan order, cancelled requests included.
        completed = [request for request, _, _, end in plan.prefills if end == len(request.prompt)]
        first_is_eos = dict(zip(map(id, completed), prefill_eos, strict=True))
        for request, _, start, end in plan.prefills:
            m.prefill_tokens.inc(end - start)
            if not request.done and end == len(request.prompt) and first_is_eos[id(request)]:
                self._finish(request, EOS)
        if decoded is None:
            return
        m.batch_size.observe(len(plan.decodes))
        m.frames.inc(len(plan.decodes))
        groups = self.runner.groups
        # Sized now, not at admission: the first requests of a burst are admitted before the rest have arrived.
        first_frames = self.first_chunk.frames_for(len(self.slots) + len(self.waiting))
        now, early_frames = self.clock(), self.lead.min_frames
        # Early chunks only while frames come faster than they play: slower, they would not feed the listener.
        early = (now - self._last_delivery) * 1000.0 < self.lead.frame_ms
        self._last_delivery = now
        for request, row in zip(plan.decodes, decoded, strict=True):
            if request.done:
                continue  # cancelled while the step ran: its frame is dropped
            request.buffer.append(row[:groups])
            held = len(request.buffer)
            if row[groups]:
                self._flush(request, now, step_ms, last=True)
                self._finish(request, EOS if row[groups + 1] else MAX_NEW_TOKENS)
            elif held >= request.plan.size(request.chunks_sent, first_frames):
                self._flush(request, now, step_ms, last=False)
            elif early and now >= request.flush_by and held >= early_frames:  # the lead fell under the floor
                self.metrics.early_chunk_frames.observe(held)
                self._flush(request, now, step_ms, last=False)

    def _flush(self, request: Request, now: float, step_ms: float, last: bool) -> None:
        """Send the buffered frames as one chunk (`now`: the step's clock reading)."""
        codes = np.stack(request.buffer)
        request.buffer = []
        if request.chunks_sent == 0:
            request.play_start = now
            request.first_chunk_ms = (time.perf_counter() - request.arrived) * 1000.0
            self.metrics.first_chunk_ms.observe(request.first_chunk_ms)
            if request.plan.initial == 0 and not last:  # sized by the engine (a last chunk is cut short by the stop)
                self.metrics.first_chunk_frames.labels(str(len(codes))).inc()
        request.outputs.put_nowait(Chunk(codes, request.frames_sent, last, step_ms))
        request.frames_sent += len(codes)
        request.chunks_sent += 1
        request.flush_by = self.lead.flush_by(request.play_start, request.frames_sent)

    def _finish(self, request: Request, reason: str, notify: bool = True) -> None:
        """Free the slot at once and end the request's output with a Finished."""
        request.done = True
        request.embeddings = None
        if request.slot is not None:
            del self.slots[request.slot]
            self.free.append(request.slot)
        if notify:
            total_ms = (time.perf_counter() - request.arrived) * 1000.0
            request.outputs.put_nowait(
                Finished(
                    reason,
                    request.frames_sent,
                    request.chunks_sent,
                    request.prompt_tokens,
                    request.queue_ms,
                    request.first_chunk_ms,
                    total_ms,
                )
            )
        self.metrics.outcomes.labels(reason).inc()
        self._update_gauges()

    def _update_gauges(self) -> None:
        self.metrics.active_slots.set(len(self.slots))
        self.metrics.queue_depth.set(len(self.waiting))
        if not self.slots and not self.waiting:
            self.idle.set()
