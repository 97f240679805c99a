"""Settings of the talker service (flags, OMNI_TALKER_* env, the `talker:` section of a deploy profile)."""

import dataclasses

from omni.services.common.config import ServiceConfig, capture_buckets, option

from omni.talker.attention_backend import BACKENDS

KV_CACHE_DTYPES = ("auto", "fp8")


@dataclasses.dataclass
class TalkerConfig(ServiceConfig):
    max_streams: int = option(32, "concurrent requests (slots with preallocated K/V); more wait in the queue")
    max_queue: int = option(64, "requests that may wait for a slot; beyond it RESOURCE_EXHAUSTED")
    max_context: int = option(2048, "positions per slot: prompt length + max_new_tokens must fit")
    max_new_tokens: int = option(0, "default and largest max_new_tokens (0 = generation_config, capped by context)")
    kv_cache_dtype: str = option(
        "auto",
        "what the talker's K/V cache stores: auto (the model's dtype) or fp8 (e4m3: half the memory a slot and half "
        "the bytes decode attention reads; keys and values clamped to +-448 and rounded as they are written, so not "
        "the bits of the model's dtype, and greedy output may differ from the reference's); the code predictor's "
        "cache keeps the model's dtype. One H100, 1.7B graph step: -10% at 512 rows, -19% at 256 rows after "
        "700-position prompts, +2.5% at 16 rows; 512 streams of 10 s requests under MPS +0.6% (runs 224-226)",
    )
    prefill_budget: int = option(512, "prompt positions prefilled per engine step (chunked prefill)")
    step_token_budget: int = option(
        1024,
        "positions per engine step, one per decoding row included (as vLLM's max_num_batched_tokens): a step "
        "prefills up to max(prefill_budget, step_token_budget - decoding rows), so a burst of prompts into a lightly "
        "loaded talker is admitted in fewer steps (one H200, 128 streams: TTFA p99 319 / 261 -> 220 / 250 / 249 ms; "
        "512 streams as before); 0 = always prefill_budget",
    )
    prefill_min_batch: int = option(
        1, "while streams decode, hold new prompts until this many can be prefilled together (1 = never hold)"
    )
    prefill_max_wait_ms: float = option(0.0, "the longest a new prompt is held for prefill_min_batch, ms")
    initial_chunk_frames: int = option(
        2,
        "default frames in a stream's first chunk (busy_initial_chunk_frames from busy_streams): 2 gives every later "
        "chunk 80 ms more slack against playback (on one H200, 512 streams: requests with a gap 74% -> 35%; one "
        "stream's first audio 26 -> 36 ms)",
    )
    busy_initial_chunk_frames: int = option(
        4,
        "default frames in a stream's first chunk while the talker holds busy_streams or more requests when it falls "
        "due (slow steps: one H200, 1.7B, 512 streams: requests with a gap 24% -> 1% with 3 instead of 2; 800 "
        "requests open at once: 41% -> 13-28% with 4 instead of 3, 512 at the same TTFA p50)",
    )
    busy_streams: int = option(
        256,
        "requests held (in slots or waiting) from which new streams get busy_initial_chunk_frames; set it where the "
        "talker's step passes ~20 ms (the 1.7B on an H200: ~256 streams); 0 = never",
    )
    min_lead_ms: float = option(
        200.0,
        "send a stream's held frames before its chunk is full once the audio already sent would leave a listener, "
        "who started playing at the first chunk, less than this ahead (at least 2 frames, only while steps are under "
        "a frame's 80 ms apart; one H200, 800 requests open at once, ~44 ms steps: requests with a gap 91% -> 40%, "
        "74% -> 8% with a 100 ms buffer); 0 = planned chunk sizes only",
    )
    chunk_frames: int = option(15, "default frames in each steady-state chunk")
    chunk_ramp: list[int] = option(
        [2, 4, 8],
        "default chunk sizes between the first and the steady ones: with steps under 40 ms playback has no gaps",
    )
    max_chunk_frames: int = option(100, "largest chunk size a request may ask for, frames")
    async_scheduling: bool = option(
        False,
        "queue each engine step on the device before reading the previous one back, so the GPU does not wait while "
        "the host hands out frames (a stopped request is stepped once more, its frame dropped)",
    )
    async_scheduling_max_streams: int = option(
        0,
        "with async_scheduling off (a GPU shared with the codec), still queue each step ahead while at most this many "
        "streams hold a slot (0: never). Off: at 128 on one H100, 16 / 32 streams gave +2.7 / +4.2% audio-s/s but "
        "TTFA p50 45 -> 96 / 59 -> 111 ms, the codec's ticks waiting behind the talker's queued steps (run 213)",
    )
    decode_in_prefill_step: bool = option(
        True,
        "decode a new stream's first frame in the engine step that completes its prefill, not in the next one (on one "
        "H200 at 128 streams the talker's first chunk 121-128 -> 89-98 ms; no change at one stream)",
    )
    trace_steps: bool = option(
        False,
        "log one `talker.step` line per engine step: prompts and positions prefilled, rows decoded, new streams' first "
        "rows, step, engine-thread and prefill ms, and the event loop's ms before it (~60 lines/s under load)",
    )
    retry_after_s: float = option(1.0, "retry hint sent with RESOURCE_EXHAUSTED, seconds")
    cuda_graphs: bool = option(True, "on a CUDA device, replay the decode step from CUDA graphs (ignored on CPU)")
    fused_kernels: bool = option(
        True, "on a CUDA device: Triton decode attention over live lengths, fused RMSNorm/RoPE/SiLU (ignored on CPU)"
    )
    sampler_kernel: bool = option(
        True,
        "on a CUDA device: each of a decode step's 16 sampling draws as one Triton kernel instead of ~45 PyTorch ones "
        "(same ids; 1.7B step 15.2 -> 11.4 ms at batch 256 on an H200; ignored on CPU)",
    )
    fused_draws: bool = option(
        True,
        "with sampler_kernel on a CUDA device: the talker's draw takes its processors (repetition penalty, EOS before "
        "min_new_tokens, suppressed ids) and the slots' counters into its kernel, and every draw reads the sampling "
        "parameters at its row's slot (34 launches fewer a step, the same bits; run 155, one process, both orders, "
        "with skinny_linear: 512 rows -1.5 / -1.4%, 128 rows -0.6 / -1.0%, 1 row -1.3 / -1.2%)",
    )
    short_pass_kernel: bool = option(
        True,
        "on a CUDA device: the code predictor's 2-position first pass of each frame attends through the decode "
        "kernel, one kernel row per position, instead of SDPA, whose cuDNN kernel tiles 64+ queries for 2 (1.7B "
        "graph step at 512 rows 14.95 -> 13.60 ms on an H200, 512 streams 1,112 -> 1,213 audio-s/s; ignored on CPU)",
    )
    kv_write_kernel: bool = option(
        True,
        "on a CUDA device: each layer's K and V go into the cache in one Triton copy instead of two index puts (the "
        "same bits; 1.7B graph step at 512 rows 13.59 -> 12.60 ms on an H200; ignored on CPU)",
    )
    norm_rope_write_kernel: bool = option(
        True,
        "on a CUDA device with the fused kernels: each attention's q/k RMSNorm, RoPE and K/V cache write run as one "
        "kernel after its QKV GEMM (the same bits; two kernels fewer per layer; 1.7B graph step at 512 rows 12.17 -> "
        "11.86 ms, at 128 rows 7.11 -> 6.85 ms on an H200; ignored on CPU)",
    )
    norm_rope_attention_kernel: bool = option(
        False,
        "with norm_rope_write_kernel on a CUDA device (off without it): the talker's one-position passes run that "
        "kernel and their attention as one, after the QKV GEMM (28 launches fewer a 1.7B step; kernels/"
        "decode_attention.py's norm_rope_attention; the same bits as the two, runs 206-207). Off: the 1.7B step "
        "was 0.6-0.9% shorter at 16 and 32 rows but 0.9-1.0% longer at 1 row, 0.4-0.5% at 128 and 4.2-4.3% at 512 "
        "(run 205, H100)",
    )
    fused_add_norm: bool = option(
        True,
        "on a CUDA device: each residual add of the talker and code predictor runs in one kernel with the RMSNorm "
        "after it (the same bits; two kernels fewer per layer; 1.7B graph step at 512 rows 13.59 -> 13.23 ms on an "
        "H200; ignored on CPU)",
    )
    skinny_linear: bool = option(
        True,
        "on a CUDA device with the fused kernels: every GEMM of the talker and code predictor runs through a Triton "
        "kernel at steps of one row (up to 4 rows for weights of at most 1024 outputs), where cuBLAS gives a row few "
        "thread blocks; the same values within the last bit, not the same bits (run 154, one process, both orders: "
        "the 1.7B step at 1 row 5.28 -> 3.83 / 3.80 ms, 2 rows -15 / -16%, 4 rows -15%, 8 / 128 / 512 rows unchanged)",
    )
    skinny_linear_dot: bool = option(
        True,
        "with skinny_linear: every GEMM of the talker and code predictor at steps of up to 16 rows through Triton "
        "kernels, from 2 rows (3 at <= 2048 outputs, 5 at <= 1024) through one that reads each weight block once for "
        "all rows (tensor-core dots over rows padded to 16) instead of cuBLAS (run 160, one process, both orders: the "
        "1.7B step at 2 rows -4.6 / -4.9%, 4 rows -3.6 / -3.7%, 8 rows -6.3 / -6.6%, 16 rows -7.8 / -7.4%; the 0.6B "
        "-2 to -9%; 1 / 128 / 512 rows unchanged)",
    )
    skinny_linear_by_shape: bool = option(
        True,
        "with skinny_linear: the kernels' launches by the weight's shape: at one row the row kernel's, and (with "
        "skinny_linear_dot) at K >= 2N K split over 4 programs a feature block in the dot kernel (the last adds the "
        "shares in order: still deterministic) (runs 163-164, one process, both orders: the 1.7B step at 1 row -2.5 / "
        "-2.1%, 8 rows -2.1 / -1.9%, 16 rows -1.7 / -1.2%, 2 / 4 rows within 0.8%)",
    )
    skinny_linear_dot_32: bool = option(
        True,
        "with skinny_linear_dot: the dot kernel up to 32 rows on weights of <= 2048 outputs or <= 1024 inputs (the "
        "others stay on cuBLAS past 16 rows) (runs 163-164: the 1.7B step at 32 rows 5.25 -> 4.96 ms, -5.5 / -5.3%; "
        "with skinny_linear_by_shape the 0.6B -6.7 / -6.8%)",
    )
    skinny_linear_silu_down: bool = option(
        False,
        "with skinny_linear: each MLP's SiLU(gate) * up formed inside its down projection's kernel as it loads its "
        "input, wherever that projection runs through the kernels, instead of one kernel before it (the same bits; "
        "one kernel fewer per layer; run 174: the 1.7B step 1-2% faster at 1 row but 27% slower at 16 rows and 30% "
        "at 32, where each of a projection's column blocks forms the gated input again, so off)",
    )
    skinny_linear_silu_down_max_rows: int = option(
        0,
        "with skinny_linear_silu_down: only in forwards of at most this many rows (decode steps: each CUDA graph "
        "bucket as captured; 1: the row kernel's one-row launches, where run 174 gained, but with programmatic launch "
        "on the 1-row step was 1.2% slower, run 175); 0: every forward whose down projections run the kernels",
    )
    programmatic_launch: bool = option(
        True,
        "on a CUDA device of compute capability 9.0 or more: the step's Triton kernels launch with programmatic "
        "dependent launch, so each kernel's programs are scheduled while the one before it finishes (each waits for "
        "it before touching memory: the same bits), in steps of at most programmatic_launch_max_rows rows (runs "
        "171-174, the 1.7B step: 16-17% faster at 1 row, 8% at 16, 3% at 32, 0.7% at 64, 0.1% at 128, 1.2-1.3% "
        "slower at 256, 0.5-1.0% at 512)",
    )
    programmatic_launch_max_rows: int = option(
        64,
        "with programmatic_launch: only the decode steps (each CUDA graph bucket as captured) and prefills of at most "
        "this many rows (prefill: padded positions) launch with it, the others as before; 0: every launch (run 173: "
        "the bound leaves larger steps' times as without the launch, within 0.25%)",
    )
    programmatic_early_weights: bool = option(
        False,
        "with programmatic_launch: the GEMM kernels load their first chunk of weights before waiting for the kernels "
        "ahead of them (the weights do not depend on them; the same bits; the dot kernel gets one pipeline stage "
        "fewer for the early chunk's tiles; run 175: the 1.7B step 0.6-0.8% faster at 1 row but 14% slower at 16 "
        "rows, so off)",
    )
    projected_lookups: bool = option(
        True,
        "the code predictor's passes 2..15 look their input up in codebook tables already projected to its width "
        "(made at start-up; 14 x 2048 x 1024, 59 MB, for the 1.7B in bf16) instead of running the projection GEMM on "
        "each looked-up embedding: 14 GEMMs fewer a 1.7B step, none for the 0.6B (no projection). Not the same bits "
        "(the tables' fp32 sums run in another order); greedy codes equal the official's on the tiny checkpoints, and "
        "in fp32 every code equals the projection's (run 190). Alone 0.3-0.4% faster at 1 row, 1.0-1.3% at 16 rows "
        "(runs 190-191, H100); with lookup_kernels see there",
    )
    lookup_kernels: bool = option(
        True,
        "on a CUDA device: the frame's embedding sum (the talker's next input) by one Triton kernel after the code "
        "predictor's passes instead of an add in each, and with projected_lookups each pass's input gathered by one, "
        "both launched programmatically with the step's other kernels (the same bits; with projected_lookups 30 "
        "PyTorch kernels fewer a 1.7B step, without it 15 adds in one kernel). Runs 190-191 (H100): the 1.7B step "
        "with both 2.5-2.6% faster than without at 1 row, 2.7-3.0% at 16, 2.6-2.7% at 32, 1.9-2.0% at 128, 1.3-1.5% "
        "at 512",
    )
    step_input_kernel: bool = option(
        True,
        "on a CUDA device: what a decode step gathers at its rows' slots before the code predictor's first pass (drawn "
        "counts, frame, codebook 0's id and embedding, last hidden state, position, the trailing text id's embedding "
        "row) in one Triton kernel launched programmatically with the step's others, instead of 15 PyTorch kernels "
        "(the same bits; kernels/frame_embedding.py's step_inputs). Runs 193-194 (H100): the 1.7B step 0.67-0.73% "
        "faster at 1 row, 0.53-0.78% at 16, 0.22-0.55% at 32-512",
    )
    step_write_kernel: bool = option(
        False,
        "on a CUDA device: what a decode step writes at its rows' slots after the talker's draw (next positions, the "
        "drawn ids into the histories, last hidden states) and a padded batch's scratch slot reset in one Triton "
        "kernel launched programmatically with the step's others, instead of 8 PyTorch kernels (the same bits; "
        "kernels/step_writes.py). Off: its rule (>= 0.2% faster at 1 and 16 rows in all three comparisons) failed at "
        "16 rows twice, runs 193-194 (0.07-0.42% faster, two of three under 0.2%) and run 198 (3.0-3.3% slower in two "
        "of three, 0.48% faster in one); at 1 row 0.20-0.93% faster (H100)",
    )
    step_rope_tables: bool = option(
        True,
        "with step_input_kernel and fused_kernels on a CUDA device (off without them): the talker forward's RoPE rows "
        "read by the step input kernel from tables made once for every position (by the ops a forward runs), with the "
        "attention's key counts, instead of 4 PyTorch kernels a step (the same bits). Runs 195-196 (H100): the 1.7B "
        "step 0.18-0.38% faster at 1 row, 0.16-0.39% at 16, 0.03-0.32% at 32-512",
    )
    prefill_graphs: bool = option(
        True, "with cuda_graphs on CUDA: replay prefill forwards from CUDA graphs per (batch, width) bucket"
    )
    prefill_batch_buckets: list[int] = option(
        [1, 2, 4, 8, 16],
        "prompts per prefill graph to capture; a bucket above 16 only for widths within 16 x 512 padded positions "
        "(with a prefill_budget above 512, a burst of short prompts is admitted in fewer steps; on one H200 at 512 "
        "streams, with budget 2048 and buckets to 64, TTFA p99 1,331 -> 826 ms, but more requests had a gap: each "
        "larger prefill delays every running stream's next frame)",
    )
    prefill_attention: str = option(
        "auto",
        "on CUDA, the PyTorch attention kernel for prompt positions: default (PyTorch's choice, cuDNN on an H200), "
        "math, cudnn, or auto: default under prefill graphs (each bucket's cuDNN graph is built once, at capture), "
        "math for eager prefill (cuDNN would build a graph for every new prompt shape, ~40 ms each)",
    )
    graph_batch_buckets: list[int] = option(
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 320, 384, 448, 512, 640],
        "batch sizes to capture a graph for (those below max_streams; max_streams itself is always captured). "
        "Above 256 the 1.7B step grows ~1.3 ms per 64 rows on an H200, so a batch of 443 is 16.1 ms in its 448 graph "
        "and 17.4 ms padded to 512; 512 and 640 serve stacks sized above 512 streams",
    )

    def prefill_widths(self) -> list[int]:
        """The prefill graphs' width buckets: up to the most positions a step prefills, so no prompt chunk a step can
        plan runs eagerly."""
        return capture_buckets([32, 64, 128, 256, 512], max(self.prefill_budget, self.step_token_budget))

    def validate(self) -> "TalkerConfig":
        if self.max_streams < 1 or self.max_queue < 0:
            raise ValueError(f"need max_streams >= 1 and max_queue >= 0, got {self.max_streams}, {self.max_queue}")
        if self.max_context < 3 or self.max_new_tokens < 0 or self.prefill_budget < 1 or self.step_token_budget < 0:
            raise ValueError(
                "need max_context >= 3, max_new_tokens >= 0, prefill_budget >= 1 and step_token_budget >= 0"
            )
        if self.prefill_min_batch < 1 or self.prefill_max_wait_ms < 0:
            raise ValueError("need prefill_min_batch >= 1 and prefill_max_wait_ms >= 0")
        if self.max_chunk_frames < 1:
            raise ValueError(f"max_chunk_frames must be >= 1, got {self.max_chunk_frames}")
        if self.busy_streams < 0:
            raise ValueError(f"busy_streams must be >= 0, got {self.busy_streams}")
        if self.async_scheduling_max_streams < 0:
            raise ValueError(f"async_scheduling_max_streams must be >= 0, got {self.async_scheduling_max_streams}")
        if self.skinny_linear_silu_down_max_rows < 0:
            raise ValueError(
                f"skinny_linear_silu_down_max_rows must be >= 0, got {self.skinny_linear_silu_down_max_rows}"
            )
        if self.programmatic_launch_max_rows < 0:
            raise ValueError(f"programmatic_launch_max_rows must be >= 0, got {self.programmatic_launch_max_rows}")
        if not self.min_lead_ms >= 0:
            raise ValueError(f"min_lead_ms must be >= 0, got {self.min_lead_ms}")
        sizes = [("initial_chunk_frames", self.initial_chunk_frames), ("chunk_frames", self.chunk_frames)]
        for name, size in [*sizes, ("busy_initial_chunk_frames", self.busy_initial_chunk_frames)]:
            if not 1 <= size <= self.max_chunk_frames:
                raise ValueError(f"{name} must be in [1, max_chunk_frames={self.max_chunk_frames}], got {size}")
        if any(not 1 <= s <= self.max_chunk_frames for s in self.chunk_ramp):
            raise ValueError(f"chunk_ramp sizes must be in [1, {self.max_chunk_frames}], got {self.chunk_ramp}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ValueError(f"kv_cache_dtype must be one of {KV_CACHE_DTYPES}, got {self.kv_cache_dtype!r}")
        if self.prefill_attention not in ("auto", *BACKENDS):
            raise ValueError(f"prefill_attention must be auto or one of {BACKENDS}, got {self.prefill_attention!r}")
        if not self.prefill_batch_buckets or min(self.prefill_batch_buckets) < 1:
            raise ValueError(f"prefill_batch_buckets must be non-empty sizes >= 1, got {self.prefill_batch_buckets}")
        if not self.graph_batch_buckets or min(self.graph_batch_buckets) < 1:
            raise ValueError(f"graph_batch_buckets must be non-empty sizes >= 1, got {self.graph_batch_buckets}")
        if not self.retry_after_s >= 0:
            raise ValueError(f"retry_after_s must be >= 0, got {self.retry_after_s}")
        return self
