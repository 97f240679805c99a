"""The talker model runner: the model plus preallocated per-slot state, one batched decode step.

A slot holds one request for its life: talker K/V (positions 0..), code-predictor K/V (16 positions,
rewritten every frame), the pending codebook-0 id and the talker hidden it came from, the
repetition-penalty history as a [slots, vocab] mask, the trailing-text queue, sampling parameters and
seed, and counters. `prefill` writes the prompt and draws the first codebook-0 id; each `decode_step`
then completes the pending frame (code predictor: 2-token prefill + 14 single steps) and draws the next
codebook-0 id from the talker, exactly as the official `Qwen3TTSTalkerForConditionalGeneration.forward`
(tts-architectures.md §A1.5-A1.6). Everything in a step is batched tensor code; nothing reads a value
back to the host.
"""

import dataclasses
from collections.abc import Sequence
from functools import partial

import torch

from omni.device import to_device
from omni.device_memory import ensure_room
from omni.fp8 import FP8_DTYPE
from omni.launch_rows import launching_rows
from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import (
    SHORT_PASS_POSITIONS,
    AttentionInputs,
    CacheKernels,
    Qwen3TTSTalker,
    rope_cos_sin,
)
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import (
    DRAWS_PER_FRAME,
    SamplingParams,
    SlotSampling,
    SubtalkerRows,
    draw,
    draw_talker,
    sample_subtalker,
)


class TalkerRunner:
    def __init__(
        self,
        talker: Qwen3TTSTalker,
        config: Qwen3TTSConfig,
        num_slots: int,
        max_len: int,
        device: torch.device | str | None = None,
        scratch_slot: bool = False,
        decode_kernel: bool | None = None,
        sampler_kernel: bool = False,
        short_pass_kernel: bool = True,
        kv_write_kernel: bool = False,
        norm_rope_write_kernel: bool = False,
        predictor_tables: bool = True,
        fused_draws: bool = False,
        projected_lookups: bool = False,
        lookup_kernels: bool = False,
        step_input_kernel: bool = False,
        step_write_kernel: bool = False,
        step_rope_tables: bool = False,
        norm_rope_attention_kernel: bool = False,
        kv_cache_dtype: torch.dtype | None = None,
    ):
        """`max_len` bounds prompt length + generated frames per slot (the talker K/V length).

        `scratch_slot` adds one slot past `num_slots` for the padding rows of fixed-size batches
        (`decode_step_padded`, used by the CUDA graphs); requests never get it.
        `decode_kernel`: decode steps attend with the Triton kernel over each slot's live length instead of the
        masked PyTorch attention over all `max_len` positions; default: on for CUDA devices.
        `sampler_kernel`: the 16 draws of a step each run as one Triton kernel (kernels/sampling.py) instead of ~45
        PyTorch ones; same ids (see that module for the top-p boundary). Off by default here; the service turns it on
        for CUDA devices.
        `fused_draws` (with `sampler_kernel`): the talker's draw takes its processors (repetition penalty, EOS before
        min_new_tokens, suppressed ids) and the slots' counters into its kernel (`kernels/sampling.py: draw_talker`),
        and every draw reads the per-slot sampling parameters at the row's slot instead of gathering them first (the
        same bits; 34 launches fewer a step). Without it the processors and counters are PyTorch ops
        (`sampling.draw_talker`, the kernel's reference).
        `short_pass_kernel` (with `decode_kernel`): the code predictor's 2-position first pass of each frame attends
        through the kernel too, one kernel row per position (False: through SDPA, as before session 22).
        `kv_write_kernel`: each layer's K and V go into the caches in one Triton copy instead of two index puts (the
        same bits; kernels/kv_write.py). Off by default until measured on a GPU.
        `norm_rope_write_kernel`: with a talker fused by `fuse_talker_kernels`, each attention's q/k norms, RoPE and
        K/V cache write run as one kernel after its QKV GEMM (the same bits; kv_write.norm_rope_write_kv); an unfused
        talker ignores it.
        `predictor_tables`: the code predictor's attention inputs (RoPE's cos and sin, the lengths or mask) made once
        here for each of its 15 passes at every row, since its positions are the same every frame; a pass reads the
        first B rows (4 launches fewer a pass, the same bits). False (the benchmark's A/B): made by every pass.
        `projected_lookups`: the code predictor's passes 2..15 look their input up in codebook tables already projected
        to its width (`CodePredictor.projected_embeddings`, made here) instead of projecting the looked-up embedding:
        one GEMM fewer a pass where the widths differ (the 1.7B), 14 a step. Not the same bits: the tables' fp32 sums
        run in another order than the GEMM's, so an element may round one bf16 step apart. A model of equal widths
        has no projection, and the flag changes nothing.
        `lookup_kernels`: the frame's embedding sum (the talker's next input) made by one Triton kernel after the code
        predictor's passes instead of an add in each, and with `projected_lookups` each pass's input gathered by one
        (kernels/frame_embedding.py: launched programmatically with the step's other kernels, where PyTorch's are
        not); passes then look up no talker-width embedding. The same bits. With `projected_lookups` a 1.7B step runs
        30 PyTorch kernels fewer (15 lookups, 15 adds) than with neither flag; without it the 15 adds become one kernel.
        `step_input_kernel`: what a decode step gathers at its rows' slots before the first pass (drawn counts, frame,
        codebook 0's id and embedding, last hidden state, position, the trailing text id's embedding row) in one
        Triton kernel (kernels/frame_embedding.py's `step_inputs`) instead of 15 PyTorch kernels. The same bits.
        `step_write_kernel`: what a step writes at its rows' slots after the draw (next positions, histories, last
        hidden states) and a padded batch's scratch reset in one Triton kernel (kernels/step_writes.py) instead of 8
        PyTorch kernels. The same bits.
        `step_rope_tables` (with step_input_kernel and the decode-attention kernel): the talker forward's RoPE rows
        read from tables made once for positions 0..max_len-1 (by the ops a forward runs) and its key counts, both by
        the step input kernel, instead of 4 PyTorch kernels a step (mul, cos, sin, add). The same bits.
        `norm_rope_attention_kernel` (with norm_rope_write_kernel and the decode-attention kernel): a fused talker's
        one-position backbone passes run their q/k norms, RoPE, K/V write and attention as one kernel after the QKV
        GEMM (kernels/decode_attention.py's `norm_rope_attention`) instead of two: 28 launches fewer a 1.7B step. The
        code predictor's passes keep the two (see there). The same bits as the two on a GPU (runs 206-207, bf16 and
        fp32); not faster (run 205: off in the talker service).
        `kv_cache_dtype`: what the talker's K/V cache stores, None for the model's dtype, or torch.float8_e4m3fn (the
        service's `kv_cache_dtype` fp8): half the bytes a position, every write converted by omni/fp8.py's rule and
        every read upcast (KVCache). The code predictor's 16-position cache keeps the model's dtype.
        """
        self.talker = talker
        self.config = config
        weight = talker.codec_head.weight
        self.device = torch.device(device) if device is not None else weight.device
        self.dtype = weight.dtype
        self.num_slots = num_slots
        self.max_len = max_len
        t = config.talker
        self.groups = t.num_code_groups
        self.eos_id = t.codec_eos_token_id
        self.tts_pad_id = config.tts_pad_token_id
        dev, hidden = self.device, t.hidden_size
        self.scratch_slot = num_slots if scratch_slot else None
        rows = num_slots + int(scratch_slot)

        if decode_kernel is None:
            decode_kernel = self.device.type == "cuda"
        self.draw, self.draw_talker = draw, draw_talker
        self.indexed_draws = False  # whether the draws read the sampling parameters at each row's slot themselves
        self.codes_by_group = True  # decode_step's codes group-major (contiguous lookups); False: row-major, as before
        if sampler_kernel:  # imports Triton: only when asked for
            from omni.kernels.sampling import draw as kernel_draw
            from omni.kernels.sampling import draw_talker as kernel_draw_talker

            self.draw = kernel_draw
            self.draw_talker = kernel_draw_talker if fused_draws else partial(draw_talker, draw_fn=kernel_draw)
            self.indexed_draws = fused_draws
        positions = SHORT_PASS_POSITIONS if short_pass_kernel else 1
        kernels = CacheKernels(
            attention=decode_kernel,
            positions=positions,
            write=kv_write_kernel,
            norm_rope_write=norm_rope_write_kernel,
            norm_rope_attention=norm_rope_attention_kernel,
        )
        if kv_cache_dtype not in (None, self.dtype, FP8_DTYPE):
            raise ValueError(f"kv_cache_dtype must be None, {self.dtype} or {FP8_DTYPE}, got {kv_cache_dtype}")
        # The largest buffer a talker holds: refused with its size and the device's free memory before it is made
        # (its shape from a cache on the meta device, which allocates nothing).
        cache_dtype = kv_cache_dtype or self.dtype
        shape_only = talker.new_cache(rows, max_len, cache_dtype, "meta")
        dtype_name = str(cache_dtype).removeprefix("torch.")
        what = f"the talker's K/V cache ({rows} slots x {max_len} positions of {dtype_name})"
        ensure_room(shape_only.k.nbytes + shape_only.v.nbytes, dev, what)
        self.cache = talker.new_cache(rows, max_len, cache_dtype, dev, kernels)
        # The code predictor's passes keep the two kernels: its attention launches with 1 warp and the norm kernel
        # with 4, and one kernel cannot sum as both do (run 203: the fused kernel with 4 warps there was not the same
        # bits in fp32, and 4% slower at 1 row).
        predictor_kernels = dataclasses.replace(kernels, norm_rope_attention=False)
        self.predictor_cache = talker.code_predictor.new_cache(rows, self.dtype, dev, predictor_kernels)
        self.sampling = SlotSampling(rows, dev)
        # As the official generate: the top 1024 codec ids are suppressed, except EOS.
        self.suppressed = torch.zeros(t.vocab_size, dtype=torch.bool, device=dev)
        self.suppressed[t.vocab_size - 1024 :] = True
        self.suppressed[self.eos_id] = False

        self.seen = torch.zeros(rows, t.vocab_size, dtype=torch.bool, device=dev)  # repetition history
        self.next_pos = torch.zeros(rows, dtype=torch.int64, device=dev)  # next talker position
        self.last_hidden = torch.zeros(rows, hidden, dtype=self.dtype, device=dev)  # "past_hidden"
        self.pending = torch.zeros(rows, dtype=torch.int64, device=dev)  # last drawn codebook-0 id
        self.drawn = torch.zeros(rows, dtype=torch.int64, device=dev)  # codebook-0 ids drawn so far
        self.trailing = torch.full((rows, max_len), self.tts_pad_id, dtype=torch.int64, device=dev)
        self.trailing_len = torch.zeros(rows, dtype=torch.int64, device=dev)
        self.finished = torch.ones(rows, dtype=torch.bool, device=dev)
        self._true = torch.ones((), dtype=torch.bool, device=dev)  # what a drawn id writes into `seen`
        self._predictor_pos = torch.arange(self.groups, device=dev)
        self.projected = talker.code_predictor.projected_embeddings() if projected_lookups else None
        self.frame_tables = None  # codebooks 1..15's embeddings stacked, for the frame_sum kernel (lookup_kernels)
        if lookup_kernels:  # imports Triton: only when asked for
            from omni.kernels.frame_embedding import frame_sum, gather_rows

            self.frame_sum, self.gather_rows = frame_sum, gather_rows
            self.frame_tables = talker.code_predictor.stacked_codec_embeddings()
        self.step_inputs = None  # step_input_kernel: the step's gathers at its slots in one kernel
        if step_input_kernel:  # imports Triton: only when asked for
            from omni.kernels.frame_embedding import step_inputs

            self.step_inputs = step_inputs
        self.step_writes = None  # step_write_kernel: the step's writes at its slots (and the scratch reset) in one
        if step_write_kernel:
            from omni.kernels.step_writes import step_writes

            self.step_writes = step_writes
        self.rope_tables = None  # step_rope_tables: the talker's RoPE (cos, sin) [max_len, head_dim] by position
        if step_rope_tables:
            if not step_input_kernel or self.cache.kernel_positions < 1:
                raise ValueError("step_rope_tables needs step_input_kernel and the decode-attention kernel")
            positions = torch.arange(max_len, device=dev)[None]
            cos, sin = rope_cos_sin(positions, talker.model.rope_frequencies(dev), self.dtype)  # as a forward does
            self.rope_tables = (cos[0, :, 0].contiguous(), sin[0, :, 0].contiguous())
        # Per pass (1..15), with predictor_tables: its attention inputs at every row (slots and scratch).
        self._predictor_inputs: list[AttentionInputs] | None = None
        if predictor_tables:
            made = talker.code_predictor.model.attention_inputs
            self._predictor_inputs = [
                made(self._predictor_positions(g, rows), self.predictor_cache, self.groups, self.dtype)
                for g in range(1, self.groups)
            ]
        if self.scratch_slot is not None:
            # Greedy defaults keep the scratch rows' arithmetic finite (all-zero parameters would divide by 0).
            self.sampling.set(self.scratch_slot, SamplingParams(do_sample=False, subtalker_dosample=False))
            self._reset_scratch()

    # ---- admission ----

    @torch.no_grad()
    def embed_prompt(self, prompt: TalkerPrompt) -> torch.Tensor:
        """[L, H]: per position the text-track vector plus the codec-track vector (id, x-vector or ref frame)."""
        return self.embed_prompts([prompt])[0]

    @torch.no_grad()
    def embed_prompts(self, prompts: Sequence[TalkerPrompt]) -> list[torch.Tensor]:
        """`embed_prompt` of each prompt: all their ids reach the device in one copy and go through one embedding
        pass, with no host sync (no boolean indexing). Returns views [L_i, H] of one tensor."""
        t = self.talker
        ids = to_device(torch.cat([torch.stack([p.text_ids, p.codec_ids]) for p in prompts], dim=1), self.device)
        text, codec = ids
        zero = torch.zeros((), dtype=self.dtype, device=self.device)
        # Where a track has no term its vector is 0 (NO_ID rows are embedded as id 0 and masked out).
        x = torch.where((text != NO_ID)[:, None], t.embed_text(text.clamp(min=0)), zero)
        x = x + torch.where((codec != NO_ID)[:, None], t.embed_codec(codec.clamp(min=0)), zero)
        rows = list(x.split([len(p) for p in prompts]))
        for row, prompt in zip(rows, prompts, strict=True):  # voice-clone terms: only prompts that have them
            if prompt.x_vector is not None:
                row[prompt.x_vector_pos] += prompt.x_vector.to(device=self.device, dtype=self.dtype)
            if prompt.ref_codes is not None:
                n = prompt.ref_codes.shape[0]
                row[prompt.ref_codes_pos : prompt.ref_codes_pos + n] += t.embed_frame(prompt.ref_codes.to(self.device))
        return rows

    @torch.no_grad()
    def prefill(self, slot: int, prompt: TalkerPrompt, params: SamplingParams, chunk_size: int | None = None) -> None:
        """Reset `slot`, run the prompt through the talker (in chunks of `chunk_size` positions) and draw the
        first codebook-0 id."""
        x = self.begin_prefill(slot, prompt, params)
        step = chunk_size or len(prompt)
        for start in range(0, len(prompt), step):
            self.prefill_chunk(slot, x, start, min(start + step, len(prompt)))

    @torch.no_grad()
    def begin_prefill(self, slot: int, prompt: TalkerPrompt, params: SamplingParams) -> torch.Tensor:
        """Reset `slot` for a new request; returns its prompt embeddings [L, H] for `prefill_chunk`."""
        return self.begin_prefill_batch([(slot, prompt, params)])[0]

    @torch.no_grad()
    def begin_prefill_batch(self, requests: Sequence[tuple[int, TalkerPrompt, SamplingParams]]) -> list[torch.Tensor]:
        """`begin_prefill` for several (slot, prompt, params) at once, in a fixed number of device calls: the
        engine admits many requests in one step, and per-request copies and writes would cost more host time than
        the prefill forward itself. Slots must be distinct."""
        for slot, prompt, params in requests:
            if not 0 <= slot < self.num_slots:
                raise ValueError(f"slot {slot} is outside [0, {self.num_slots})")
            if len(prompt) == 0:
                raise ValueError("the prompt is empty")
            if len(prompt) + params.max_new_tokens > self.max_len:
                raise ValueError(
                    f"prompt length {len(prompt)} + max_new_tokens {params.max_new_tokens} exceeds the slot length "
                    f"{self.max_len}"
                )
        if len({slot for slot, _, _ in requests}) != len(requests):
            raise ValueError("begin_prefill_batch needs distinct slots")
        # One host buffer: the slot, the trailing-text length, then the trailing text padded with tts_pad to max_len.
        host = torch.full((len(requests), 2 + self.max_len), self.tts_pad_id, dtype=torch.int64)
        for row, (slot, prompt, _) in enumerate(requests):
            n = prompt.trailing_ids.numel()
            host[row, 0], host[row, 1] = slot, n
            host[row, 2 : 2 + n] = prompt.trailing_ids
        host = to_device(host, self.device)
        slots = host[:, 0]
        self.sampling.set_many(slots, [params for _, _, params in requests])
        self.seen.index_fill_(0, slots, False)
        self.drawn.index_fill_(0, slots, 0)
        self.finished.index_fill_(0, slots, False)
        self.trailing_len.index_copy_(0, slots, host[:, 1])
        self.trailing.index_copy_(0, slots, host[:, 2:])
        return self.embed_prompts([prompt for _, prompt, _ in requests])

    @torch.no_grad()
    def prefill_chunk(self, slot: int, x: torch.Tensor, start: int, end: int) -> None:
        """Run prompt positions start..end-1 of `slot` (chunks in order); the chunk that reaches the end of the
        prompt draws the first codebook-0 id. Chunked prefill lets a scheduler interleave long prompts with
        decode steps of other slots."""
        self.prefill_batch([(slot, x, start, end)])

    @torch.no_grad()
    def prefill_batch(self, chunks: list[tuple[int, torch.Tensor, int, int]]) -> list[int]:
        """Prompt chunks of several slots in one forward: each (slot, embeddings [L, H], start, end), as
        `prefill_chunk` runs them one by one. Returns the slots whose prompt this completed (first id drawn).

        Rows are right-padded to the longest chunk. A padding position writes junk K/V past its row's chunk (at
        end, end+1, ...); no query reads it: queries attend only to positions <= their own, and the next chunk or
        decode step writes each of those positions before anything attends to it.
        """
        if not chunks:
            return []
        width = max(end - start for _, _, start, end in chunks)
        with launching_rows(len(chunks) * width):
            return self._prefill_batch(chunks, width)

    def _prefill_batch(self, chunks: list[tuple[int, torch.Tensor, int, int]], width: int) -> list[int]:
        x = torch.zeros(len(chunks), width, self.config.talker.hidden_size, dtype=self.dtype, device=self.device)
        starts = to_device(torch.tensor([start for _, _, start, _ in chunks]), self.device)
        for row, (_, emb, start, end) in enumerate(chunks):
            x[row, : end - start] = emb[start:end]
        positions = (starts[:, None] + torch.arange(width, device=self.device)).clamp(max=self.max_len - 1)
        slots = to_device(torch.tensor([slot for slot, _, _, _ in chunks]), self.device)
        kv_len = min(max(start for _, _, start, _ in chunks) + width, self.max_len)
        hidden = self.talker(x, positions, self.cache, slots, kv_len=kv_len)
        done = [row for row, (_, emb, _, end) in enumerate(chunks) if end == emb.shape[0]]
        if done:
            rows = to_device(torch.tensor(done), self.device)
            last = to_device(torch.tensor([chunks[r][3] - chunks[r][2] - 1 for r in done]), self.device)
            written = to_device(torch.tensor([chunks[r][3] - 1 for r in done]), self.device)  # each prompt's last
            self._draw_talker(slots[rows], hidden[rows, last], written)
        return [chunks[r][0] for r in done]

    @torch.no_grad()
    def prefill_padded(
        self, x: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, last: torch.Tensor, complete: torch.Tensor
    ) -> None:
        """`prefill_batch` over fixed shapes with no host sync and no branch on tensor values; CUDA-graph capturable.

        x [B, W, H]: each row's chunk, right-padded to W; positions [B, W]: start + 0..W-1 (clamped here to
        max_len - 1); slots [B]: spare rows are the scratch slot; last [B]: each row's last chunk index (end - start
        - 1); complete [B] bool: the chunk reaches the end of its prompt. Attention reads the whole cache under the
        causal mask, so one shape serves every start. The first codebook-0 id is drawn for every row, but only the
        complete rows write it: the others are redirected to the scratch slot, so their own per-slot state is left
        as it was. The scratch slot is reset at the end, as `decode_step_padded` does.
        """
        with launching_rows(x.shape[0] * x.shape[1]):
            self._prefill_padded(x, positions, slots, last, complete)

    def _prefill_padded(
        self, x: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, last: torch.Tensor, complete: torch.Tensor
    ) -> None:
        if self.scratch_slot is None:
            raise ValueError("prefill_padded needs a runner built with scratch_slot=True")
        b = x.shape[0]
        if tuple(last.shape) != (b,) or tuple(complete.shape) != (b,) or complete.dtype != torch.bool:
            raise ValueError(f"last and complete must be [{b}] (complete bool), got {last.shape}, {complete.dtype}")
        positions = positions.clamp(max=self.max_len - 1)
        hidden = self.talker(x, positions, self.cache, slots, kv_len=self.max_len)
        rows = torch.arange(b, device=self.device)
        targets = torch.where(complete, slots, torch.full_like(slots, self.scratch_slot))
        self._draw_talker(targets, hidden[rows, last], positions[rows, last], padded=True)

    # ---- decoding ----

    def _draw_talker(
        self,
        slots: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        drawn: torch.Tensor | None = None,
        padded: bool = False,
    ) -> torch.Tensor:
        """Codebook-0 ids from talker hidden [B, H] of `slots`, written at positions [B]; updates the per-slot next
        position, history, last hidden state and counters, then with `padded` resets the scratch slot its spare rows
        stepped. `drawn`: `self.drawn[slots]` when the caller has gathered it. Returns finished [B] (EOS drawn, or
        max_new_tokens ids), as written to `self.finished[slots]` (rows repeating a slot: each its own value)."""
        drawn = self.drawn[slots] if drawn is None else drawn
        logits = self.talker.codec_logits(hidden)
        ids, finished = self.draw_talker(
            logits, slots, drawn, self.seen, self.sampling, self.suppressed, self.eos_id, self.pending, self.drawn,
            self.finished,
        )  # fmt: skip
        # After the draw, which read the history.
        if self.step_writes is not None:
            scratch = self.scratch_slot if padded else None
            self.step_writes(slots, ids, hidden, positions, self.next_pos, self.seen, self.last_hidden, self.drawn,
                             self.finished, scratch)  # fmt: skip
            return finished
        self.next_pos[slots] = positions + 1
        self.seen.index_put_((slots, ids), self._true)
        self.last_hidden[slots] = hidden
        if padded:
            self._reset_scratch()
        return finished

    @torch.no_grad()
    def decode_step(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Complete the pending frame of each slot and draw the next codebook-0 id.

        Returns codes [B, 16] (the completed frames) and finished [B]: True when the drawn id is EOS or
        max_new_tokens ids were drawn, i.e. the returned frame is the slot's last one. Slots must not be
        stepped after they finished.
        """
        with launching_rows(slots.shape[0]):
            return self._decode_step(slots)

    def _decode_step(self, slots: torch.Tensor, padded: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        t, predictor = self.talker, self.talker.code_predictor
        b = slots.shape[0]
        # The frame's codes as [16, B], codebook by codebook. Group-major (`codes_by_group`), each codebook's ids
        # are contiguous, the index its embedding lookup reads: a strided column sends index_select down its
        # generic path (17 us a lookup at 16 rows on an H200, run 168). Returned as the [B, 16] view either way.
        if self.codes_by_group:
            codes = torch.empty(self.groups, b, dtype=torch.int64, device=self.device)
        else:
            codes = torch.empty(b, self.groups, dtype=torch.int64, device=self.device).t()

        # Code predictor: [past_hidden, E0(cb0)] then E_{g-1}(cb_{g-1}) for g = 2..15, positions from 0. The
        # embeddings it reads are the frame's codebook embeddings, so the talker's next input (`embed_frame`: their
        # sum from codebook 0 up, the same adds in the same order) is summed as they are made, or with lookup_kernels
        # by one kernel after the passes (the same adds).
        if self.step_inputs is not None:  # step_input_kernel: the gathers below and the text id's row in one kernel
            gathered = self.step_inputs(
                slots, self.drawn, self.pending, self.next_pos, self.trailing, self.trailing_len, self.last_hidden,
                t.model.codec_embedding.weight, t.model.text_embedding.weight, self.tts_pad_id, codes[0],
                DRAWS_PER_FRAME, self.rope_tables,
            )  # fmt: skip
            drawn, counter, x, positions = gathered.drawn, gathered.counter, gathered.x, gathered.positions
            attention = gathered.attention  # with step_rope_tables: the talker forward's, made there otherwise
            frame_embedding, text = x[:, 1], t.text_projection(gathered.text)
        else:
            drawn = self.drawn[slots]
            frame = drawn - 1  # index of the frame being completed
            counter = frame * DRAWS_PER_FRAME
            codes[0] = self.pending[slots]
            frame_embedding = t.embed_codec(codes[0])
            x = torch.stack([self.last_hidden[slots], frame_embedding], dim=1)
            positions = text = attention = None  # after the passes
        sub = SubtalkerRows.gather(self.sampling, slots, counter, indexed=self.indexed_draws)
        for g in range(1, self.groups):
            projected = g > 1 and self.projected is not None
            if g > 1:
                x, frame_embedding = self._pass_input(g, codes[g - 1], frame_embedding)
            h = predictor(x, self._predictor_positions(g, b), self.predictor_cache, slots, self.groups,
                          self._predictor_inputs_at(g, b), projected=projected)[:, -1]  # fmt: skip
            sample_subtalker(predictor.logits(h, g), sub, g, self.draw, out=codes[g])

        # Next talker input: the frame's summed embeddings + the next trailing text vector (or tts_pad).
        if text is None:
            text_ids = torch.where(
                frame < self.trailing_len[slots],
                self.trailing[slots, frame.clamp(max=self.max_len - 1)],
                torch.full_like(frame, self.tts_pad_id),
            )
            text = t.embed_text(text_ids)
            positions = self.next_pos[slots][:, None]
        if self.frame_tables is not None:  # lookup_kernels: the sum and the text's add in one kernel, in that order
            x = self.frame_sum(frame_embedding, self.frame_tables, codes[1:], then=text)
        else:
            x = frame_embedding + t.lookup(predictor.codec_embedding[-1], codes[-1]) + text
        hidden = t(x[:, None], positions, self.cache, slots, inputs=attention)[:, -1]
        return codes.t(), self._draw_talker(slots, hidden, positions[:, 0], drawn, padded)

    def _pass_input(
        self, g: int, ids: torch.Tensor, frame_embedding: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Pass g's (2..15) input [B, 1, width] from codebook g-1's ids: its embedding at the talker's width, or with
        projected_lookups its row of the projected table. And the frame's embedding sum with that embedding added,
        unless lookup_kernels sums the frame after the passes (then, with projected_lookups, no talker-width lookup)."""
        t, kernel_sum = self.talker, self.frame_tables is not None
        if self.projected is not None and kernel_sum:  # nothing to add here: the input row is all a pass needs
            return self.gather_rows(self.projected[g - 2].weight, ids)[:, None], frame_embedding
        embedding = t.lookup(t.code_predictor.codec_embedding[g - 2], ids)
        if not kernel_sum:
            frame_embedding = frame_embedding + embedding
        x = embedding if self.projected is None else t.lookup(self.projected[g - 2], ids)
        return x[:, None], frame_embedding

    def _predictor_positions(self, g: int, b: int) -> torch.Tensor:
        """Pass `g`'s positions for `b` rows: 0 and 1 for the first, g after (views of one arange)."""
        return self._predictor_pos[:2].expand(b, 2) if g == 1 else self._predictor_pos[g : g + 1].expand(b, 1)

    def _predictor_inputs_at(self, g: int, b: int) -> AttentionInputs | None:
        """Pass `g`'s attention inputs for `b` rows: the first b rows of its tables (None: not kept, or a padded
        batch of more rows than the runner has, which makes its own)."""
        if self._predictor_inputs is None:
            return None
        (cos, sin), visible = self._predictor_inputs[g - 1]
        if b > visible.shape[0]:
            return None
        return (cos[:b], sin[:b]), visible[:b]

    @torch.no_grad()
    def decode_step_padded(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`decode_step` over a fixed-size batch whose spare rows are the scratch slot; CUDA-graph capturable.

        The rows of real slots get exactly what `decode_step` gives them: every row reads and writes only its own
        slot's state. The padding rows all step the scratch slot, which is then reset to frame 0 at position 0 so
        that its writes stay inside its K/V however many steps run. Rows past the real ones are to be ignored.
        """
        if self.scratch_slot is None:
            raise ValueError("decode_step_padded needs a runner built with scratch_slot=True")
        with launching_rows(slots.shape[0]):
            return self._decode_step(slots, padded=True)

    def _reset_scratch(self) -> None:
        """The scratch slot back to its first frame: position 0, one id drawn, no history (in-place, capturable)."""
        s = slice(self.scratch_slot, self.scratch_slot + 1)  # fill_ on views: no host scalar copy under capture
        self.next_pos[s].fill_(0)
        self.drawn[s].fill_(1)
        self.seen[s].fill_(False)
        self.finished[s].fill_(False)
