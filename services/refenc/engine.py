"""The encoder behind the cache: the models, and a batcher that owns them.

`ReferenceModel` turns 24 kHz PCM into reference codes (the codec's Mimi encoder) and, for Base models, an
x-vector (the speaker encoder). `EncodeBatcher` queues encode requests; one worker takes what arrived within
`max_wait_ms` (up to `max_batch`), orders it by length and runs it as one model call in a worker thread, so
the event loop keeps serving while the model computes and only one thread ever touches the model.

The model call encodes the items of a batch one after another: the speaker encoder pools over the whole
utterance with reflect padding, so padding items to a common length would change their x-vectors.
"""

import asyncio
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from omni.services.common.metrics import BATCH_SIZE_BUCKETS, MetricsServer
from omni.services.refenc.cache import ReferenceEncoding

log = logging.getLogger("omni.refenc.engine")


class ReferenceModel:
    """Codec encoder (+ speaker encoder for Base models)."""

    def __init__(self, codec_encoder, speaker_encoder: torch.nn.Module | None, num_quantizers: int) -> None:
        self.codec_encoder = codec_encoder
        self.speaker_encoder = speaker_encoder
        self.num_quantizers = num_quantizers

    @classmethod
    def load(cls, model_dir: str | Path, dtype: torch.dtype = torch.float32, device: str = "cpu") -> "ReferenceModel":
        from omni.models.qwen3_tts.codec_encoder import CodecEncoder
        from omni.models.qwen3_tts.speaker_encoder import load_speaker_encoder

        model_dir = Path(model_dir)
        codec_encoder = CodecEncoder.from_pretrained(model_dir, dtype=dtype, device=device)
        base = json.loads((model_dir / "config.json").read_text()).get("tts_model_type") == "base"
        speaker_encoder = load_speaker_encoder(model_dir, dtype=dtype).to(device) if base else None
        return cls(codec_encoder, speaker_encoder, codec_encoder.valid_quantizers)

    @torch.inference_mode()
    def encode_batch(self, pcms: list[np.ndarray]) -> list[ReferenceEncoding]:
        from omni.models.qwen3_tts.speaker_encoder import extract_xvector

        out = []
        for pcm in pcms:
            codes = self.codec_encoder.encode(pcm).cpu().numpy()
            xvector = None
            if self.speaker_encoder is not None:
                xvector = extract_xvector(self.speaker_encoder, pcm).float().cpu().numpy()
            out.append(ReferenceEncoding(codes, xvector))
        return out


class EncodeBatcher:
    """Queue + one worker that runs `model.encode_batch` on what arrived together."""

    def __init__(
        self, model: ReferenceModel, max_batch: int = 8, max_wait_ms: float = 5.0, metrics: MetricsServer | None = None
    ) -> None:
        self.model = model
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        metrics = metrics or MetricsServer("omni_refenc")
        self._latency = metrics.histogram("encode_latency_ms", "Model time of one encode batch, ms")
        self._batch_size = metrics.histogram("encode_batch_size", "Requests per encode batch", BATCH_SIZE_BUCKETS)
        self._queued = metrics.gauge("encode_queue_depth", "Encode requests waiting for the model")
        self._queue: asyncio.Queue[tuple[np.ndarray, asyncio.Future]] = asyncio.Queue()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refenc-model")
        self._worker: asyncio.Task | None = None

    def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None
        while not self._queue.empty():
            _, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(RuntimeError("reference encoder is shutting down"))
        self._executor.shutdown(wait=True)

    async def encode(self, pcm24k: np.ndarray) -> ReferenceEncoding:
        """The injected encode function of the cache."""
        if self._worker is None:
            raise RuntimeError("EncodeBatcher.start() was not called")
        future = asyncio.get_running_loop().create_future()
        await self._queue.put((pcm24k, future))
        self._queued.set(self._queue.qsize())
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            deadline = loop.time() + self.max_wait_s
            while len(batch) < self.max_batch:
                if not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                    continue
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), remaining))
                except TimeoutError:
                    break
            self._queued.set(self._queue.qsize())
            batch = [item for item in batch if not item[1].done()]  # callers that gave up
            if not batch:
                continue
            batch.sort(key=lambda item: len(item[0]))
            start = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self.model.encode_batch, [p for p, _ in batch])
            except Exception as e:  # one bad batch fails its requests, never the worker
                log.exception("encode batch of %d failed", len(batch))
                results = [e] * len(batch)
            self._latency.observe((time.perf_counter() - start) * 1000.0)
            self._batch_size.observe(len(batch))
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)
