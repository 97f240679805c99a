"""The talker engine: continuous batching of many requests over the runner's slots.

Two asyncio tasks drive the runner, each through a one-thread executor of its own, so the event loop keeps serving
RPCs and prompts are prefilled while the decode steps go on:

- the decode loop: one batched `decode_step` over every slot that finished its prefill, one [B, 18] tensor to the
  host; each request gets its frame and emits a chunk once it holds as many frames as its plan says (1, then the
  ramp, then 15 by default), flushing the rest with `last` when it stops;
- the prefill loop: admit waiting requests into free slots and run the prompt chunks of prefilling requests, up to
  `prefill_budget` positions per forward (chunked prefill), on a CUDA stream of its own. A prefill forward is
  eager and host-bound (hundreds of launches; ~25 ms for one 1.7B prompt on an H200 host), so in one loop with the
  decodes it would stall every stream's step; here it overlaps them. A request joins the decode batch once its
  prompt is done.

Handlers `submit` a request (it waits in a bounded queue), read `request.outputs` (Chunk... then one Finished) and
`cancel` it when the call ends early. They never touch tensors. Both loops drop requests whose deadline passed.

Slot hygiene: the two loops touch disjoint slots: a slot prefills only before it decodes. A cancelled or finished
request gives its slot back at once, except that a slot inside the decode step in flight is held until that step
has finished (`_release`), so a new owner's prefill can never write a slot the decode step still reads. Prefill
forwards run one at a time, and `begin_prefill` rewrites every per-slot tensor. Results go to the request objects
captured when the work was planned, which drop them once done. So nothing of one request reaches another.

KV memory: per-slot contiguous caches of `max_len` positions (the runner's KVCache). A stream's memory is
fixed (layers x max_len x kv_heads x head_dim x 2), so admission never fails midway; paging would only pay
off with many short streams on a long max_len.
"""

import asyncio
import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from omni.services.talker.metrics import TalkerMetrics
from omni.talker.cuda_graphs import TalkerGraphs
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
    """Chunk sizes in frames: `initial`, then each of `ramp`, then `steady` for the rest."""

    initial: int = 1
    steady: int = 15
    ramp: tuple[int, ...] = ()

    def size(self, index: int) -> int:
        """Frames in chunk number `index` (0-based)."""
        if index == 0:
            return self.initial
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
    slot: int | None = None
    prefilled: int = 0  # prompt positions run so far
    embeddings: torch.Tensor | None = None  # [L, H], between the first and the last prefill chunk
    buffer: list[np.ndarray] = field(default_factory=list)  # frames not yet sent
    frames_sent: int = 0
    chunks_sent: int = 0
    queue_ms: float = 0.0
    first_chunk_ms: float = 0.0
    done: bool = False

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def decoding(self) -> bool:
        return self.slot is not None and self.prefilled == len(self.prompt)


class TalkerEngine:
    def __init__(
        self,
        runner: TalkerRunner,
        max_queue: int,
        prefill_budget: int = 512,
        retry_after_s: float = 1.0,
        metrics: TalkerMetrics | None = None,
        graphs: TalkerGraphs | None = None,
    ) -> None:
        """`graphs`: captured decode steps of `runner` (CUDA); without them every step runs eagerly."""
        if max_queue < 0 or prefill_budget < 1:
            raise ValueError(f"need max_queue >= 0 and prefill_budget >= 1, got {max_queue}, {prefill_budget}")
        self.runner = runner
        self.decode_step = graphs.decode_step if graphs is not None else runner.decode_step
        self.max_streams = runner.num_slots
        self.max_len = runner.max_len
        self.max_queue = max_queue
        self.prefill_budget = prefill_budget
        self.retry_after_s = retry_after_s
        self.metrics = metrics or TalkerMetrics()
        self.free = list(reversed(range(runner.num_slots)))  # pop() takes the lowest slot first
        self.waiting: deque[Request] = deque()
        self.slots: dict[int, Request] = {}  # slot -> request (prefilling or decoding)
        self.stepping: set[int] = set()  # slots of the decode step in flight
        self.held: list[int] = []  # freed slots waiting for that step to finish
        self.accepting = True
        self.prefill_wake = asyncio.Event()  # something to admit or prefill
        self.decode_wake = asyncio.Event()  # a request finished its prefill
        self.idle = asyncio.Event()
        self.idle.set()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="talker-decode")
        self.prefill_executor = ThreadPoolExecutor(1, thread_name_prefix="talker-prefill")
        self.prefill_stream = torch.cuda.Stream(runner.device) if runner.device.type == "cuda" else None
        self.tasks: list[asyncio.Task] = []
        self.metrics.capacity.set(self.max_streams)
        self.profiler = StepProfiler()  # off unless OMNI_TALKER_PROFILE_PREFILL_STEPS names steps

    # ---- handler side (event-loop thread) ----

    def check_fits(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """A request that could never fit a slot is refused up front (ValueError)."""
        if prompt_tokens + max_new_tokens > self.max_len:
            raise ValueError(
                f"prompt length {prompt_tokens} + max_new_tokens {max_new_tokens} exceeds the context limit "
                f"{self.max_len}"
            )

    def submit(self, request: Request) -> Request:
        """Queue a request; raises EngineClosed, QueueFull or ValueError (too long)."""
        if not self.accepting:
            raise EngineClosed("the talker is shutting down")
        self.check_fits(request.prompt_tokens, request.params.max_new_tokens)
        # Waiting requests take the free slots first (held ones are free after the step in flight); up to max_queue
        # more may wait for one.
        if len(self.waiting) >= len(self.free) + len(self.held) + self.max_queue:
            raise QueueFull(f"the wait queue is full ({len(self.waiting)} waiting)", self.retry_after_s)
        self.waiting.append(request)
        self._update_gauges()
        self.idle.clear()
        self.prefill_wake.set()
        return request

    def cancel(self, request: Request, reason: str = CANCELLED) -> None:
        """End a request early (client gone, deadline, shutdown): its slot is free at once."""
        if request.done:
            return
        if request.slot is None:
            self.waiting.remove(request)
        self._finish(request, reason)

    # ---- engine tasks ----

    def start(self) -> None:
        self.tasks = [
            asyncio.create_task(self._prefill_loop(), name="talker-prefill"),
            asyncio.create_task(self._decode_loop(), name="talker-decode"),
        ]

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
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self.executor.shutdown(wait=True)
        self.prefill_executor.shutdown(wait=True)

    async def _prefill_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._expire()
            self._admit()
            chunks = self._plan_prefill()
            if not chunks:
                self.prefill_wake.clear()
                await self.prefill_wake.wait()
                continue
            try:
                eos, prefill_ms = await loop.run_in_executor(self.prefill_executor, self._prefill, chunks)
            except Exception:  # a failed prefill ends the requests in it, not the service
                log.exception("talker prefill failed")
                self._fail([r for r, _, _ in chunks], "the talker prefill failed")
                continue
            self.metrics.prefill_ms.observe(prefill_ms)
            self.metrics.prefill_batch.observe(len(chunks))
            self._prefilled(chunks, eos)

    async def _decode_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._expire()
            decodes = [r for r in self.slots.values() if r.decoding]
            if not decodes:
                self.decode_wake.clear()
                await self.decode_wake.wait()
                continue
            self.stepping = {r.slot for r in decodes}
            start = time.perf_counter()
            try:
                decoded, compute_ms = await loop.run_in_executor(self.executor, self._decode, decodes)
            except Exception:  # a failed step ends the requests in it, not the service
                log.exception("talker step failed")
                self._fail(decodes, "the talker step failed")
                continue
            finally:
                self._step_finished()
            step_ms = (time.perf_counter() - start) * 1000.0
            self.metrics.step_ms.observe(step_ms)
            self.metrics.step_compute_ms.observe(compute_ms)
            self._deliver(decodes, decoded, step_ms)

    def _fail(self, requests: list[Request], message: str) -> None:
        for request in requests:
            if not request.done:
                request.outputs.put_nowait(RuntimeError(message))
                self._finish(request, "error", notify=False)

    def _expire(self) -> None:
        now = time.monotonic()
        for request in [*self.waiting, *self.slots.values()]:
            if request.deadline is not None and now >= request.deadline:
                self.cancel(request, DEADLINE)

    def _admit(self) -> None:
        while self.free and self.waiting:
            request = self.waiting.popleft()
            request.slot = self.free.pop()
            request.queue_ms = (time.perf_counter() - request.arrived) * 1000.0
            self.slots[request.slot] = request
            self.metrics.queue_wait_ms.observe(request.queue_ms)
        self._update_gauges()

    def _plan_prefill(self) -> list[tuple[Request, int, int]]:
        """Prompt chunks (request, start, end) of the prefilling requests, oldest first, up to the token budget."""
        budget = self.prefill_budget
        chunks = []
        for request in sorted(self.slots.values(), key=lambda r: r.arrived):
            if budget == 0:
                break
            if not request.decoding:
                end = min(request.prefilled + budget, len(request.prompt))
                chunks.append((request, request.prefilled, end))
                budget -= end - request.prefilled
        return chunks

    # ---- executor threads ----

    def _prefill(self, chunks: list[tuple[Request, int, int]]) -> tuple[list[bool], float]:
        """Prefill thread: one forward over the chunks (their slots are distinct); returns each completed request's
        EOS flag and the ms it took (to a host sync)."""
        with self.profiler.prefill_step(len(chunks), len(self.stepping)):
            began = time.perf_counter()
            with torch.cuda.stream(self.prefill_stream) if self.prefill_stream is not None else nullcontext():
                runner = self.runner
                for request, start, _ in chunks:
                    if start == 0:
                        request.embeddings = runner.begin_prefill(request.slot, request.prompt, request.params)
                completed = runner.prefill_batch([(r.slot, r.embeddings, start, end) for r, start, end in chunks])
                # A first codebook-0 id can already be EOS (min_new_tokens 1): such a request has no frames.
                eos = runner.finished[completed].tolist() if completed else []
                if self.prefill_stream is not None:
                    self.prefill_stream.synchronize()  # the decode stream reads these slots next
            return eos, (time.perf_counter() - began) * 1000.0

    def _decode(self, decodes: list[Request]) -> tuple[np.ndarray, float]:
        """Decode thread: one batched decode step; returns [B, 18] on the host and the ms it took."""
        began = time.perf_counter()
        runner = self.runner
        slots = torch.tensor([r.slot for r in decodes], device=runner.device)
        codes, finished = self.decode_step(slots)
        eos = runner.pending[slots] == runner.eos_id
        decoded = torch.cat([codes, finished[:, None].to(codes.dtype), eos[:, None].to(codes.dtype)], 1)
        return decoded.cpu().numpy(), (time.perf_counter() - began) * 1000.0

    # ---- results (event-loop thread) ----

    def _prefilled(self, chunks: list[tuple[Request, int, int]], eos: list[bool]) -> None:
        """Advance prefill counters; a request whose prompt is done decodes from the next step on."""
        # `eos` has one flag per chunk that completed its prompt, in chunk order, cancelled requests included.
        completed = [request for request, _, end in chunks if end == len(request.prompt)]
        first_is_eos = dict(zip(map(id, completed), eos, strict=True))
        for request, start, end in chunks:
            self.metrics.prefill_tokens.inc(end - start)
            if request.done:
                continue  # cancelled while its prefill ran
            request.prefilled = end
            if end == len(request.prompt):
                request.embeddings = None
                if first_is_eos[id(request)]:
                    self._finish(request, EOS)
        self.decode_wake.set()

    def _deliver(self, decodes: list[Request], decoded: np.ndarray, step_ms: float) -> None:
        """Hand out frames, finish stopped requests."""
        m = self.metrics
        m.batch_size.observe(len(decodes))
        m.frames.inc(len(decodes))
        groups = self.runner.groups
        for request, row in zip(decodes, decoded, strict=True):
            if request.done:
                continue  # cancelled while the step ran: its frame is dropped
            request.buffer.append(row[:groups])
            if row[groups]:
                self._flush(request, step_ms, last=True)
                self._finish(request, EOS if row[groups + 1] else MAX_NEW_TOKENS)
            elif len(request.buffer) >= request.plan.size(request.chunks_sent):
                self._flush(request, step_ms, last=False)

    def _flush(self, request: Request, step_ms: float, last: bool) -> None:
        """Send the buffered frames as one chunk."""
        codes = np.stack(request.buffer)
        request.buffer = []
        if request.chunks_sent == 0:
            request.first_chunk_ms = (time.perf_counter() - request.arrived) * 1000.0
            self.metrics.first_chunk_ms.observe(request.first_chunk_ms)
        request.outputs.put_nowait(Chunk(codes, request.frames_sent, last, step_ms))
        request.frames_sent += len(codes)
        request.chunks_sent += 1

    def _finish(self, request: Request, reason: str, notify: bool = True) -> None:
        """Free the slot (held while the decode step in flight has it) and end the request's output."""
        request.done = True
        request.embeddings = None
        if request.slot is not None:
            del self.slots[request.slot]
            self._release(request.slot)
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

    def _release(self, slot: int) -> None:
        if slot in self.stepping:
            self.held.append(slot)
        else:
            self.free.append(slot)
            self.prefill_wake.set()

    def _step_finished(self) -> None:
        self.stepping = set()
        if self.held:
            self.free += self.held
            self.held = []
            self.prefill_wake.set()

    def _update_gauges(self) -> None:
        self.metrics.active_slots.set(len(self.slots))
        self.metrics.queue_depth.set(len(self.waiting))
        if not self.slots and not self.waiting:
            self.idle.set()
