"""Settings of the codec service (flags, OMNI_CODEC_* env, the `codec:` section of a deploy profile)."""

import dataclasses

from omni.services.common.config import ServiceConfig, option

FUSED_KERNELS = ("off", "snakebeta", "all", "channels_last")


@dataclasses.dataclass
class CodecConfig(ServiceConfig):
    max_streams: int = option(64, "concurrent streams (decoder state slots); beyond it streams are refused")
    min_batch: int = option(1, "coalescing target: streams per decode step worth waiting for (1 = off)")
    max_wait_ms: float = option(
        0.0, "coalescing window: longest wait for min_batch streams from when a tick could start, ms (0 = off)"
    )
    max_chunk_frames: int = option(250, "largest chunk a client may send, frames")
    max_ref_frames: int = option(375, "largest reference (priming) code sequence, frames (375 = 30 s)")
    max_backlog_frames: int = option(500, "undecoded frames a stream may queue before its reads pause")
    cuda_graphs: bool = option(True, "on a CUDA device, replay the decode step from CUDA graphs (ignored on CPU)")
    graph_batch_buckets: list[int] = option(
        [1, 2, 4, 8, 16, 32, 64, 128, 256],
        "batch sizes to capture a graph for (capped at max_streams; a larger step splits over several replays)",
    )
    graph_chunk_lengths: list[int] = option(
        [1, 4, 8, 15],
        "chunk lengths to capture a graph for (frames, capped at max_chunk_frames); shorter chunks are padded up, "
        "longer ones run eagerly (4 and 8 hold the talker's ramp chunks of 2, 4, 8 frames without padding to 15)",
    )
    merge_chunk_frames: int = option(
        15,
        "a stream's queued chunks decode together in one step while their frames sum to at most this (capped at the "
        "longest graph chunk length; 1 = one chunk per stream per step)",
    )
    first_chunks_apart: bool = option(
        False,
        "decode new streams' first chunks in a step of their own, sent before the rest of the tick is decoded (time "
        "to first audio waits for a short step instead of a whole tick; on one H200 at 512 streams TTFA p50 420 -> "
        "310 ms, but 96% of requests had a gap against 74%: the extra step delays every other stream's chunk)",
    )
    max_tick_rows: int = option(
        128,
        "at most this many streams' rows in one decode step, those whose listeners are closest to running dry first "
        "(new streams first; the rest go in the next step and merge what they queue meanwhile): one H200, 800 "
        "requests open at once, requests with a gap 30% -> 3% and 6% (0% with a 100 ms buffer), TTFA p50 820 -> "
        "435-469 ms, audio-s/s -5%; 64 was worse (14%); 0 = every stream with chunks",
    )
    async_scheduling: bool = option(
        False,
        "queue each decode step on the device before reading the previous one's audio back, so the GPU has the "
        "codec's next step while the host hands out the last one's audio (excludes coalescing; off: one H200 shared "
        "with the talker, 512 streams, utilization 90.8 -> 93.0% but 1,414.8 -> 1,318.2 audio-s/s, its ticks of 46 "
        "rows instead of 73 costing more per frame (run 112))",
    )
    trace_ticks: bool = option(
        False,
        "log one `codec.tick` line per engine tick: streams reset, rows, frames, new streams' first rows, engine "
        "thread ms, tick ms and the idle ms before it (to see where a chunk waited; ~40 lines/s under load)",
    )
    fused_kernels: str = option(
        "channels_last",
        "Triton kernels on CUDA in bf16/fp16: off, snakebeta, all (snakebeta + fused residual units), channels_last "
        "(all, with the vocoder's activations channels-last: no layout conversions around the convs)",
    )
    fast_sine: bool = option(
        True,
        "with fused_kernels channels_last, SnakeBeta's sine by sin.approx instead of libdevice's sinf (same bf16 "
        "error; one H200, 128x15 codec step 45.8 -> 39.9 ms; 512 streams 1,228.7 -> 1,259.0 audio-s/s (+2.5%), no "
        "gap either way, and 800 requests opened at once 4.2% -> 0.2% with a gap (run 89))",
    )
    transformer_kernels: bool = option(
        True,
        "on CUDA: the transformer's RMSNorm, RoPE and SiLU-up as one Triton kernel each, q/k/v and gate/up as one GEMM "
        "each (the talker's fused kernels; ~45 -> ~20 kernels a layer, roundings within the GEMM's; one H200, 128x2 "
        "graph step -6.9% in one process (run 93); with the RVQ and attention kernels, 512 streams 1,354.6 -> "
        "1,411.4 audio-s/s and 800 opened at once with no gap, twice (runs 94, 95, 97))",
    )
    attention_kernel: bool = option(
        True,
        "on CUDA: the transformer's sliding-window attention as one Triton kernel computing its mask from the "
        "positions, instead of SDPA over a mask tensor (cuDNN's flash tiles sized for long sequences; sums in "
        "another order, fp32 within 6e-6; one H200, 128x2 graph step -9.1% in one process (run 93))",
    )
    rvq_kernel: bool = option(
        True,
        "on CUDA: the RVQ decode as one Triton lookup-and-sum kernel per codebook group over the codebooks divided "
        "once, instead of ~5 kernels per codebook (the same bits; one H200, 128x2 graph step -2.4% in one process "
        "(run 93))",
    )
    residual_snake_kernel: bool = option(
        True,
        "on CUDA, with fused_kernels channels_last: each residual unit's closing add (x + conv2 + bias) also writes "
        "the SnakeBeta that reads its output into the next conv's input buffer, so 12 of the vocoder's 29 SnakeBetas "
        "need no read of their own (the same bits; one H200, 128x15 graph step -2.3%, 128x2 -2.2% in one process "
        "(run 101))",
    )
    unit_tail_kernel: bool = option(
        False,
        "on CUDA, with fused_kernels channels_last: each residual unit's second SnakeBeta, its 1x1 conv2 and the "
        "closing add (and, with residual_snake_kernel, the next SnakeBeta) as one Triton GEMM, two reads and two "
        "writes instead of eight passes (bitwise against cuDNN on an H200; off: one H200, 128x15 graph step +4.7%, "
        "128x2 +6.1% in one process (run 105))",
    )
    conv1_kernel: bool = option(
        True,
        "on CUDA, with fused_kernels channels_last and without unit_tail_kernel: each residual unit's dilated k=7 "
        "conv1 (dilations 3 and 9), its bias and the SnakeBeta after it as one Triton implicit GEMM "
        "(kernels/vocoder_conv.py) instead of cuDNN's conv and a SnakeBeta pass (sums in another order than cuDNN). "
        "One H100's graph step 3.0 / 4.6 / 10.7 / 14.1% shorter at 128 rows of 1 / 2 / 4 / 15 frames (run 234)",
    )
    conv2_kernel: bool = option(
        True,
        "on CUDA, with fused_kernels channels_last and without unit_tail_kernel: each residual unit's 1x1 conv2, the "
        "residual add and (with residual_snake_kernel) the next SnakeBeta as one Triton GEMM (kernels/vocoder_conv.py "
        "vocoder_conv_residual), four passes over [B, T, C] instead of six (on an H100 cuDNN's bits). One H100's graph "
        "step 0.6 / 0.4 / 2.5 / 2.1% shorter at 128 rows of 1 / 2 / 4 / 15 frames (run 235)",
    )
    transposed_kernel: bool = option(
        False,
        "on CUDA, with fused_kernels channels_last: the transposed conv of vocoder blocks 0, 2 and 3 "
        "(codec_graphs.TRANSPOSED_GEMM_BLOCKS) as a 2-tap Triton implicit GEMM with one output column per (phase, "
        "channel) (kernels/vocoder_conv.transposed_matrix) instead of cuDNN's transposed conv, its epilogue also "
        "writing the first residual unit's SnakeBeta (sums in another order than cuDNN). Off: one H100's graph step "
        "-0.6 / +0.4 / +0.2 / -0.3% at 128 rows of 1 / 2 / 4 / 15 frames (run 242; all four blocks +1.2 / -0.7 / "
        "-1.3 / +0.05%, run 235)",
    )
    window_kernel: bool = option(
        True,
        "on CUDA: the transformer's K/V windows copied between the state's rows and each layer's [past | new] buffer "
        "by one Triton kernel each way instead of gathers, concatenations, a stack and an index put (the same bits; "
        "one H200, 128-row graph step at 2 frames 11.38 -> 8.91 ms, at 15 frames 40.30 -> 37.58 (run 91))",
    )
    history_kernel: bool = option(
        True,
        "on CUDA: each stateful conv's input history copied between the state's rows and its [history | new] buffer "
        "by one Triton kernel each way instead of ~6 small kernels (a gather, a copy, an end index, a gather, an "
        "index put; the same bits; 21 convs; one H200, graph step 1x1 -15.3%, 128x2 -6.5%, 128x15 -1.1% in one "
        "process (run 117))",
    )
    add_norm_kernel: bool = option(
        True,
        "on CUDA: each of the transformer's residual adds, its LayerScale applied, in one Triton kernel with the "
        "RMSNorm after it (the talker's fused_add_norm for the codec): 32 kernels fewer a codec step (the same bits; "
        "one H200, graph step 1x1 -3.7%, 1x15 -4.9%, 128x1 -2.8%, 128x2 -2.5%, 128x15 +0.2% in one process (run 120))",
    )
    window_pair_kernel: bool = option(
        True,
        "on CUDA: a transformer layer's K and V windows by one Triton launch each way (both [past | new] buffers "
        "built by one kernel, both new windows kept by one) instead of window_kernel's three launches each: 32 "
        "kernels fewer a codec step (the same bits; one H200, realistic ticks of 40 / 81 / 128 rows -1.2% / -1.4% / "
        "-0.7% (run 125); graph step 1x1 -6.4% / -8.2%, 128x2 +1.2% / -0.8%, 128x15 -0.1% / +0.4% (runs 122, 124))",
    )
    qk_rope_kernel: bool = option(
        False,
        "on CUDA, with transformer_kernels: RoPE of a transformer layer's q and k by one Triton launch over the "
        "adjacent q|k columns of the fused q/k/v projection instead of one each: 8 kernels fewer a codec step (the "
        "same bits; off: one H200, realistic ticks of 40 / 81 / 128 rows -0.0% / -0.3% / +0.1%, graph step 1x1 "
        "+0.3%, 128x15 +0.2% (run 125))",
    )
    history_swap_kernel: bool = option(
        True,
        "on CUDA: each stateful conv's history into its [history | new] buffer and its new history back into the "
        "state's rows by one Triton launch instead of history_kernel's two: 21 kernels fewer a codec step (the same "
        "bits; one H200, realistic ticks of 40 / 81 / 128 rows -0.3% / -1.0% / -0.4%, graph step 1x1 -4.4%, 128x15 "
        "+0.1% in one process (run 128))",
    )
    upsample_channels_last: bool = option(
        True,
        "on CUDA, with fused_kernels channels_last: the two upsamplers (transposed conv, ConvNeXt block) in [B, T, C] "
        "memory as the vocoder: no cuDNN layout conversions around their 4 convs, and the ConvNeXt block's "
        "LayerNorm reads a contiguous [B, T, C] tensor, not a transposed view (not bitwise: the convs sum in another "
        "order, bf16 audio within the bf16 decoder's own error; one H200, realistic ticks of 40 / 81 / 128 rows "
        "-2.3% / -0.9% / -2.1%, graph step 1x1 -5.3%, 128x15 -1.2% in one process (run 132))",
    )

    def validate(self) -> "CodecConfig":
        if self.max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, got {self.max_streams}")
        if not 1 <= self.min_batch <= self.max_streams:
            raise ValueError(f"min_batch must be in [1, max_streams={self.max_streams}], got {self.min_batch}")
        if not 0 <= self.max_wait_ms < float("inf"):
            raise ValueError(f"max_wait_ms must be finite and >= 0, got {self.max_wait_ms}")
        if self.max_chunk_frames < 1 or self.max_ref_frames < 0:
            raise ValueError("max_chunk_frames must be >= 1 and max_ref_frames >= 0")
        if self.max_backlog_frames < self.max_chunk_frames:
            raise ValueError("max_backlog_frames must be >= max_chunk_frames")
        if not self.graph_batch_buckets or min(self.graph_batch_buckets) < 1:
            raise ValueError(f"graph_batch_buckets must be non-empty sizes >= 1, got {self.graph_batch_buckets}")
        if not self.graph_chunk_lengths or min(self.graph_chunk_lengths) < 1:
            raise ValueError(f"graph_chunk_lengths must be non-empty lengths >= 1, got {self.graph_chunk_lengths}")
        if self.max_tick_rows < 0:
            raise ValueError(f"max_tick_rows must be >= 0, got {self.max_tick_rows}")
        if self.async_scheduling and self.min_batch > 1 and self.max_wait_ms > 0:
            raise ValueError("async_scheduling excludes coalescing: set min_batch 1 or max_wait_ms 0")
        if self.merge_chunk_frames < 1:
            raise ValueError(f"merge_chunk_frames must be >= 1, got {self.merge_chunk_frames}")
        if self.fused_kernels not in FUSED_KERNELS:
            raise ValueError(f"fused_kernels must be one of {FUSED_KERNELS}, got {self.fused_kernels!r}")
        return self
