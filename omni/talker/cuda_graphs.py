"""CUDA graphs of the talker decode step, one per batch bucket, over the slots of one TalkerRunner.

A decode step is ~16 sequential forward passes (the talker, then 2-token prefill + 14 single steps of the code
predictor) plus 16 sampler calls: thousands of small kernels launched from Python, so at small batches the GPU
waits on the launches. Here `TalkerRunner.decode_step_padded` is captured once per bucket and replayed.

Static inputs per graph: slots [bucket] (device). The step already keeps everything else on the device: positions,
lengths, counters and sampling parameters are per-slot tensors read by index, and the talker attends over the whole
`max_len` cache with a causal mask, so no shape depends on a request. A call with fewer slots than its bucket fills
the spare rows with the runner's scratch slot; a call larger than every bucket runs eagerly.

`PrefillGraphs` does the same for the prompt forward (`TalkerRunner.prefill_padded`), one graph per (batch, width)
bucket: ~850 launches of an eager prefill become one replay plus the input copies.
"""

import itertools
from collections.abc import Sequence

import torch

from omni.talker.model_runner import TalkerRunner

DEFAULT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def capped_sizes(sizes: Sequence[int], limit: int) -> list[int]:
    """`sizes` capped at `limit`, sorted and distinct: the buckets a runner can fill (no call has more rows than
    its slots, or more positions than its cache)."""
    return sorted({min(size, limit) for size in sizes})


class TalkerGraphs:
    """Captured decode steps of `runner` (built on CUDA with `scratch_slot=True`), one per batch bucket."""

    def __init__(self, runner: TalkerRunner, buckets: Sequence[int] = DEFAULT_BUCKETS):
        if runner.device.type != "cuda":
            raise ValueError("TalkerGraphs needs a runner on a CUDA device")
        if runner.scratch_slot is None:
            raise ValueError("TalkerGraphs needs a runner built with scratch_slot=True (padding rows go there)")
        if not buckets or min(buckets) < 1:
            raise ValueError(f"buckets must be positive batch sizes, got {list(buckets)}")
        self.runner = runner
        # A bucket above the slot count can never be filled by real slots; the largest useful one is num_slots.
        self.buckets = capped_sizes(buckets, runner.num_slots)
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.replays = 0  # steps served by a graph
        self.eager_steps = 0  # steps larger than every bucket, run eagerly
        pool = torch.cuda.graph_pool_handle()
        # Largest first, so the smaller graphs fit in the memory the first one reserved in the shared pool.
        for b in reversed(self.buckets):
            self.graphs[b] = self._capture(b, pool)

    @torch.no_grad()
    def _capture(self, bucket: int, pool) -> tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor, torch.Tensor]:
        runner = self.runner
        slots = torch.full((bucket,), runner.scratch_slot, dtype=torch.int64, device=runner.device)
        # Warm up on a side stream (cuBLAS handles, lazy init), scratch rows only: real slots are not touched.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                runner.decode_step_padded(slots)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            codes, finished = runner.decode_step_padded(slots)
        return graph, slots, codes, finished

    def bucket_for(self, batch: int) -> int | None:
        """The smallest bucket holding `batch` rows, or None when the batch is larger than every bucket."""
        return next((b for b in self.buckets if b >= batch), None)

    @torch.no_grad()
    def decode_step(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`runner.decode_step(slots)` through the graph of the smallest bucket that holds the batch.

        The returned codes [B, 16] and finished [B] are views of the graph's output buffers: the next replay of the
        same bucket overwrites them, so copy them out (the engine copies them to the host) before the next step.
        """
        batch = slots.shape[0]
        bucket = self.bucket_for(batch)
        if bucket is None:
            self.eager_steps += 1
            return self.runner.decode_step(slots)
        graph, static_slots, codes, finished = self.graphs[bucket]
        static_slots[:batch].copy_(slots)
        static_slots[batch:].fill_(self.runner.scratch_slot)
        graph.replay()
        self.replays += 1
        return codes[:batch], finished[:batch]


# The padded positions of the largest prefill graph by default: 16 prompts x 512 (the graphs captured before batch
# buckets above 16 existed); a larger batch bucket is captured only for widths that stay within it.
PREFILL_GRAPH_POSITIONS = 16 * 512

Chunk = tuple[int, torch.Tensor, int, int]  # (slot, prompt embeddings [L, H], start, end), as prefill_batch takes


# What one more prefill forward costs, in padded positions: its fixed part (launches, weights read, the per-row
# draw) against the per-position part. On an H200 (1.7B) a 2 x 32 forward took 3.2 ms and 16 x 32 took 6.8 ms, i.e.
# ~3 ms fixed and ~7 us per padded position: one forward ~ 400 positions.
FORWARD_POSITIONS = 400


def plan_prefill(
    chunks: Sequence[Chunk],
    batch_buckets: Sequence[int],
    width_buckets: Sequence[int],
    max_positions: int | None = None,
) -> list[tuple[tuple[int, int] | None, list[Chunk]]]:
    """`chunks` as groups of one forward each, with the smallest (batch, width) bucket that holds the group.

    Chunks go narrowest first, so that short prompts are not padded to a long one's width without need. A group
    grows while a captured bucket holds it (at most the largest batch bucket, and with `max_positions` no bucket of
    more padded positions than that: `prefill_bucket_captured`), and where the next chunk needs a wider bucket, while
    widening pads fewer positions than a forward of its own would cost (`FORWARD_POSITIONS`). Chunks wider than
    every width bucket form one group with bucket None (for the eager `prefill_batch`).
    """
    widest = max(width_buckets)
    wide = [c for c in chunks if c[3] - c[2] > widest]
    narrow = sorted((c for c in chunks if c[3] - c[2] <= widest), key=lambda c: c[3] - c[2])
    groups: list[tuple[tuple[int, int] | None, list[Chunk]]] = [(None, wide)] if wide else []
    group: list[Chunk] = []
    bucket: tuple[int, int] | None = None
    for chunk in narrow:
        size = chunk[3] - chunk[2]  # the widest so far: chunks come sorted
        alone = _smallest_bucket(1, size, batch_buckets, width_buckets, max_positions)
        grown = _smallest_bucket(len(group) + 1, size, batch_buckets, width_buckets, max_positions) if group else None
        widening = grown is not None and grown[1] > bucket[1]
        if group and (
            grown is None or widening and _padded(grown) > _padded(bucket) + _padded(alone) + FORWARD_POSITIONS
        ):
            groups.append((bucket, group))  # full, or cheaper as a forward of its own: a new group starts here
            group, grown = [], None
        group.append(chunk)
        bucket = grown or alone
    if group:
        groups.append((bucket, group))
    return groups


def _padded(bucket: tuple[int, int]) -> int:
    return bucket[0] * bucket[1]


def prefill_bucket_captured(batch: int, width: int, batch_buckets: Sequence[int], max_positions: int | None) -> bool:
    """Whether PrefillGraphs captures (batch, width): within `max_positions` padded positions, or the smallest batch
    (so any chunk up to the widest width has a graph)."""
    return max_positions is None or batch * width <= max_positions or batch == min(batch_buckets)


def prefill_graph_buckets(
    batch_buckets: Sequence[int], width_buckets: Sequence[int], num_slots: int, max_len: int, max_positions: int | None
) -> list[tuple[int, int]]:
    """The (batch, width) buckets PrefillGraphs captures over a runner of `num_slots` slots of `max_len` positions,
    most padded positions first (the smaller graphs then fit in the memory the first one reserved in the shared
    pool); also tools/compare_kernel_code.py's recorded prefills."""
    batches, widths = capped_sizes(batch_buckets, num_slots), capped_sizes(width_buckets, max_len)
    buckets = [
        (b, w) for b, w in itertools.product(batches, widths) if prefill_bucket_captured(b, w, batches, max_positions)
    ]
    return sorted(buckets, key=lambda bw: bw[0] * bw[1], reverse=True)


def _smallest_bucket(
    n: int, width: int, batch_buckets: Sequence[int], width_buckets: Sequence[int], max_positions: int | None
) -> tuple[int, int] | None:
    """The smallest captured bucket holding n chunks of up to `width` positions, or None."""
    batch = min((b for b in batch_buckets if b >= n), default=None)
    padded = min(w for w in width_buckets if w >= width)
    if batch is None or not prefill_bucket_captured(batch, padded, batch_buckets, max_positions):
        return None
    return batch, padded


class PrefillInputs:
    """The static inputs of one (batch, width) prefill bucket, and the padded forward over them (`run`).

    `load(chunks)` fills them: the embeddings by device copies into `x` (right-padded with zeros), the per-row
    integers (start, slot, last index, complete) by one host-to-device copy of a [4, batch] buffer, pinned on CUDA.
    Spare rows are the scratch slot at start 0, not complete. Works on any device; graphs capture `run`.
    """

    def __init__(self, runner: TalkerRunner, batch: int, width: int):
        if runner.scratch_slot is None:
            raise ValueError("PrefillInputs needs a runner built with scratch_slot=True (padding rows go there)")
        dev, cuda = runner.device, runner.device.type == "cuda"
        self.runner, self.batch, self.width = runner, batch, width
        self.x = torch.zeros(batch, width, runner.config.talker.hidden_size, dtype=runner.dtype, device=dev)
        self.offsets = torch.arange(width, device=dev)
        self.host = torch.zeros(4, batch, dtype=torch.int64, pin_memory=cuda)  # start, slot, last, complete
        self.host[1] = runner.scratch_slot
        self.meta = self.host.to(dev, copy=True)
        # The previous call's non-blocking copy must have read the pinned buffer before it is rewritten.
        self.copied = torch.cuda.Event() if cuda else None

    def load(self, chunks: Sequence[Chunk]) -> list[int]:
        """Copy `chunks` into the static inputs; returns the slots whose prompt they complete (as prefill_batch)."""
        if not 0 < len(chunks) <= self.batch or any(not 0 < end - start <= self.width for _, _, start, end in chunks):
            raise ValueError(f"need 1..{self.batch} chunks of 1..{self.width} positions each")
        pad = [(0, self.runner.scratch_slot, 0, 0)] * (self.batch - len(chunks))
        rows = [(start, slot, end - start - 1, int(end == emb.shape[0])) for slot, emb, start, end in chunks] + pad
        if self.copied is not None:
            self.copied.synchronize()
        self.host.copy_(torch.tensor(rows).T)
        self.meta.copy_(self.host, non_blocking=True)
        if self.copied is not None:
            self.copied.record()
        self.x.zero_()
        for row, (_, emb, start, end) in enumerate(chunks):
            self.x[row, : end - start].copy_(emb[start:end])
        return [slot for slot, emb, _, end in chunks if end == emb.shape[0]]

    def run(self) -> None:
        """`runner.prefill_padded` over the static inputs (what a graph captures)."""
        starts, slots, last, complete = self.meta
        self.runner.prefill_padded(self.x, starts[:, None] + self.offsets, slots, last, complete != 0)


class PrefillGraphs:
    """Captured prompt forwards of `runner` (CUDA, `scratch_slot=True`), one per (batch, width) bucket."""

    def __init__(
        self,
        runner: TalkerRunner,
        batch_buckets: Sequence[int] = (1, 2, 4, 8, 16),
        width_buckets: Sequence[int] = (32, 64, 128, 256, 512),
        max_positions: int | None = PREFILL_GRAPH_POSITIONS,
    ):
        """`max_positions`: no graph pads to more positions than this (batch x width), so large batch buckets are
        captured for short widths only; None captures every pair."""
        if runner.device.type != "cuda":
            raise ValueError("PrefillGraphs needs a runner on a CUDA device")
        if runner.scratch_slot is None:
            raise ValueError("PrefillGraphs needs a runner built with scratch_slot=True (padding rows go there)")
        if not batch_buckets or not width_buckets or min(*batch_buckets, *width_buckets) < 1:
            raise ValueError(f"buckets must be positive sizes, got {list(batch_buckets)}, {list(width_buckets)}")
        self.runner = runner
        # As TalkerGraphs: no bucket beyond what a call can fill (num_slots rows, max_len positions).
        self.batch_buckets = capped_sizes(batch_buckets, runner.num_slots)
        self.width_buckets = capped_sizes(width_buckets, runner.max_len)
        self.max_positions = max_positions
        self.graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, PrefillInputs]] = {}
        self.replays = 0  # forwards served by a graph
        self.eager_calls = 0  # forwards of chunks wider than every bucket, run eagerly
        pool = torch.cuda.graph_pool_handle()
        buckets = prefill_graph_buckets(batch_buckets, width_buckets, runner.num_slots, runner.max_len, max_positions)
        for bucket in buckets:
            self.graphs[bucket] = self._capture(PrefillInputs(runner, *bucket), pool)

    @torch.no_grad()
    def _capture(self, inputs: PrefillInputs, pool) -> tuple[torch.cuda.CUDAGraph, PrefillInputs]:
        # Warm up on a side stream; the inputs hold scratch rows only, so real slots are not touched.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                inputs.run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            inputs.run()
        return graph, inputs

    @torch.no_grad()
    def prefill(self, chunks: Sequence[Chunk]) -> list[int]:
        """`runner.prefill_batch(chunks)` through the graphs: returns the slots whose prompt this completed, in chunk
        order. Slots must be distinct."""
        for bucket, group in plan_prefill(chunks, self.batch_buckets, self.width_buckets, self.max_positions):
            if bucket is None:
                self.runner.prefill_batch(group)
                self.eager_calls += 1
                continue
            graph, inputs = self.graphs[bucket]
            inputs.load(group)
            graph.replay()
            self.replays += 1
        return [slot for slot, emb, _, end in chunks if end == emb.shape[0]]
