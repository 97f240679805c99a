"""CUDA graphs of the talker decode step, one per batch bucket, over the slots of one TalkerRunner.

A decode step is ~16 sequential forward passes (the talker, then 2-token prefill + 14 single steps of the code
predictor) plus 16 sampler calls: thousands of small kernels launched from Python, so at small batches the GPU
waits on the launches. Here `TalkerRunner.decode_step_padded` is captured once per bucket and replayed.

Static inputs per graph: slots [bucket] (device). The step already keeps everything else on the device: positions,
lengths, counters and sampling parameters are per-slot tensors read by index, and the talker attends over the whole
`max_len` cache with a causal mask, so no shape depends on a request. A call with fewer slots than its bucket fills
the spare rows with the runner's scratch slot; a call larger than every bucket runs eagerly.
"""

from collections.abc import Sequence

import torch

from omni.talker.model_runner import TalkerRunner

DEFAULT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


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
        self.buckets = sorted({min(b, runner.num_slots) for b in buckets})
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
