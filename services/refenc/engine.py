"""The encoder behind the cache: the models, and a batcher that owns them.

`ReferenceModel` turns 24 kHz PCM into reference codes (the codec's Mimi encoder) and, for Base models, an
x-vector (the speaker encoder). `EncodeBatcher` queues encode requests; one worker takes what arrived within
`max_wait_ms` (up to `max_batch`), buckets it by length and runs each bucket as one batched model call in a worker
thread, so the event loop keeps serving while the model computes and only one thread ever touches the model.

Batching is exact: a request's codes and x-vector are byte-identical whether it is encoded alone or with others
of its bucket (the Mimi encoder rewrites each clip's padding before its strided convolutions; the speaker encoder
masks its padding and runs on the bucket's padded length, see `extract_xvectors`).
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

    def bucket(self, num_samples: int) -> int:
        """Requests of one bucket run together: the speaker encoder's padded mel length (0.68 s steps)."""
        from omni.models.qwen3_tts.speaker_encoder import xvector_bucket

        return xvector_bucket(num_samples)

    @torch.inference_mode()
    def encode_batch(self, pcms: list[np.ndarray]) -> list[ReferenceEncoding]:
        """One batched pass of each model over `pcms` (best all of one `bucket`, for byte-exact x-vectors)."""
        from omni.models.qwen3_tts.speaker_encoder import extract_xvectors

        codes = [c.cpu().numpy() for c in self.codec_encoder.encode_batch(pcms)]
        if self.speaker_encoder is None:
            return [ReferenceEncoding(c) for c in codes]
        xvectors = extract_xvectors(self.speaker_encoder, pcms).float().cpu().numpy()
        return [ReferenceEncoding(c, x) for c, x in zip(codes, xvectors, strict=True)]


class EncodeBatcher:
    """Queue + one worker that runs `model.encode_batch` on what arrived together, one call per length bucket."""

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
            buckets: dict[int, list[tuple[np.ndarray, asyncio.Future]]] = {}
            for item in batch:
                buckets.setdefault(self.model.bucket(len(item[0])), []).append(item)
            for _, bucket in sorted(buckets.items()):
                await self._encode_bucket(bucket)

    async def _encode_bucket(self, bucket: list[tuple[np.ndarray, asyncio.Future]]) -> None:
        start = time.perf_counter()
        try:
            pcms = [pcm for pcm, _ in bucket]
            results = await asyncio.get_running_loop().run_in_executor(self._executor, self.model.encode_batch, pcms)
        except Exception as e:  # one bad batch fails its requests, never the worker
            log.exception("encode batch of %d failed", len(bucket))
            results = [e] * len(bucket)
        self._latency.observe((time.perf_counter() - start) * 1000.0)
        self._batch_size.observe(len(bucket))
        for (_, future), result in zip(bucket, results, strict=True):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)
