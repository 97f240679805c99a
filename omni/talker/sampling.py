"""Batched on-device sampling with per-slot parameters, in the official (transformers) order.

Talker (codebook 0): repetition penalty -> min new tokens (EOS blocked) -> suppressed ids -> temperature
-> top-k -> top-p -> draw. The code predictor (codebooks 1..15) uses its own temperature/top-k/top-p and
nothing else (the official predictor `generate` gets no penalty or suppression). Greedy slots take the
argmax after the processors and skip the warpers, exactly as transformers does with do_sample=False.

Randomness is counter-based: the Gumbel noise for a draw is a hash of (seed, frame, draw, token), so a
request's codes depend only on its own seed and step count, never on its batch neighbours, and no
generator state lives on the host.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import torch

from omni.device import to_device

# splitmix64 constants, as signed int64 (torch has no uint64 arithmetic; int64 ops wrap around).
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_MIX1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MIX2 = 0x94D049BB133111EB - (1 << 64)
DRAWS_PER_FRAME = 16  # draw 0: talker codebook 0; draws 1..15: predictor codebooks 1..15


@dataclass
class SamplingParams:
    """One request's sampling settings (the official names; defaults are the official hard defaults)."""

    seed: int = 0
    do_sample: bool = True
    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05
    subtalker_dosample: bool = True
    subtalker_temperature: float = 0.9
    subtalker_top_k: int = 50
    subtalker_top_p: float = 1.0
    min_new_tokens: int = 2
    max_new_tokens: int = 2048

    def validate(self) -> "SamplingParams":
        for name in ("temperature", "subtalker_temperature", "repetition_penalty"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("top_p", "subtalker_top_p"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        for name in ("top_k", "subtalker_top_k"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 = off), got {getattr(self, name)}")
        if self.min_new_tokens < 1:
            raise ValueError(f"min_new_tokens must be >= 1, got {self.min_new_tokens}")
        if self.max_new_tokens < 2:
            # The last drawn codebook-0 id never becomes a frame, so 2 ids give 1 frame.
            raise ValueError(f"max_new_tokens must be >= 2, got {self.max_new_tokens}")
        if not -(1 << 63) <= self.seed < (1 << 64):
            raise ValueError(f"seed must fit in 64 bits, got {self.seed}")
        return self

    @classmethod
    def from_generation_config(cls, gen, **overrides) -> "SamplingParams":
        """generation_config.json values, then explicit overrides (None = keep), as the official wrapper merges."""
        values = {f.name: getattr(gen, f.name) for f in fields(cls) if hasattr(gen, f.name)}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values).validate()


class SlotSampling:
    """Per-slot sampling parameters as device tensors, written at admission and read by every step."""

    def __init__(self, num_slots: int, device: torch.device | str = "cpu"):
        def zeros(dtype: torch.dtype) -> torch.Tensor:
            return torch.zeros(num_slots, dtype=dtype, device=device)

        self.seed = zeros(torch.int64)
        self.do_sample = zeros(torch.bool)
        self.temperature = zeros(torch.float32)
        self.top_k = zeros(torch.int64)
        self.top_p = zeros(torch.float32)
        self.repetition_penalty = zeros(torch.float32)
        self.sub_do_sample = zeros(torch.bool)
        self.sub_temperature = zeros(torch.float32)
        self.sub_top_k = zeros(torch.int64)
        self.sub_top_p = zeros(torch.float32)
        self.min_new_tokens = zeros(torch.int64)
        self.max_new_tokens = zeros(torch.int64)

    def set(self, slot: int, p: SamplingParams) -> None:
        self.set_many(torch.tensor([slot]), [p])

    # (field, the SamplingParams value) for the integer and the float tensors: each group travels in one copy.
    _INTS = (
        ("seed", lambda p: p.seed - (1 << 64) if p.seed >= (1 << 63) else p.seed),
        ("do_sample", lambda p: p.do_sample),
        ("top_k", lambda p: p.top_k),
        ("sub_do_sample", lambda p: p.subtalker_dosample),
        ("sub_top_k", lambda p: p.subtalker_top_k),
        ("min_new_tokens", lambda p: p.min_new_tokens),
        ("max_new_tokens", lambda p: p.max_new_tokens),
    )
    _FLOATS = (
        ("temperature", lambda p: p.temperature),
        ("top_p", lambda p: p.top_p),
        ("repetition_penalty", lambda p: p.repetition_penalty),
        ("sub_temperature", lambda p: p.subtalker_temperature),
        ("sub_top_p", lambda p: p.subtalker_top_p),
    )

    def set_many(self, slots: torch.Tensor, params: Sequence[SamplingParams]) -> None:
        """Write `params[i]` into slot `slots[i]`: two host-to-device copies and one indexed write per field,
        however many slots (admission costs no per-request device calls)."""
        for p in params:
            p.validate()
        device = self.seed.device
        slots = to_device(slots, device)
        ints = to_device(torch.tensor([[get(p) for p in params] for _, get in self._INTS], dtype=torch.int64), device)
        floats = to_device(
            torch.tensor([[get(p) for p in params] for _, get in self._FLOATS], dtype=torch.float32), device
        )
        for row, (name, _) in enumerate(self._INTS):
            target = getattr(self, name)
            target.index_copy_(0, slots, ints[row].to(target.dtype))
        for row, (name, _) in enumerate(self._FLOATS):
            getattr(self, name).index_copy_(0, slots, floats[row])


# ---- logits processors (each [B, V] -> [B, V], per-row parameters [B]) ----


def apply_repetition_penalty(logits: torch.Tensor, seen: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    """transformers' RepetitionPenaltyLogitsProcessor over the ids marked in `seen` [B, V] (bool)."""
    p = penalty[:, None]
    penalized = torch.where(logits < 0, logits * p, logits / p)
    return torch.where(seen, penalized, logits)


def block_eos(logits: torch.Tensor, eos_id: int, generated: torch.Tensor, min_new_tokens: torch.Tensor) -> torch.Tensor:
    """MinNewTokensLengthLogitsProcessor: EOS is -inf while fewer than min_new_tokens were generated."""
    blocked = generated < min_new_tokens
    out = logits.clone()
    out[:, eos_id] = torch.where(blocked, torch.full_like(out[:, eos_id], -float("inf")), out[:, eos_id])
    return out


def suppress(logits: torch.Tensor, suppressed: torch.Tensor) -> torch.Tensor:
    """SuppressTokensLogitsProcessor: ids marked in `suppressed` [V] (bool) are -inf."""
    return logits.masked_fill(suppressed, -float("inf"))


def apply_temperature(logits: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    return logits / temperature[:, None]


def apply_top_k(logits: torch.Tensor, top_k: torch.Tensor) -> torch.Tensor:
    """TopKLogitsWarper per row: keep logits >= the k-th largest (ties kept); k = 0 means off."""
    vocab = logits.shape[-1]
    k = top_k.clamp(max=vocab)
    sorted_desc = logits.sort(dim=-1, descending=True).values
    kth = sorted_desc.gather(-1, (k - 1).clamp(min=0)[:, None])
    kth = torch.where(k[:, None] > 0, kth, torch.full_like(kth, -float("inf")))
    return logits.masked_fill(logits < kth, -float("inf"))


def apply_top_p(logits: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """TopPLogitsWarper per row: drop the low tail whose cumulative probability is <= 1 - top_p.

    The most probable token always stays (min_tokens_to_keep = 1); top_p = 1 removes nothing.
    """
    sorted_logits, order = logits.sort(dim=-1, descending=False)
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    remove_sorted = cumulative <= (1 - top_p)[:, None]
    remove_sorted[:, -1].fill_(False)  # fill_, not a host scalar copy: CUDA-graph capturable
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, -float("inf"))


# ---- counter-based randomness ----


def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def _mix64(z: torch.Tensor) -> torch.Tensor:
    """The splitmix64 finalizer: a bijective avalanche hash of 64-bit integers."""
    z = (z ^ _shr(z, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    return z ^ _shr(z, 31)


UNIFORM_BITS = 23


def unit_interval(bits: torch.Tensor) -> torch.Tensor:
    """Integers in [0, 2^23) -> fp32 in (0, 1), endpoints excluded: (bits + 0.5) / 2^23 is exact in fp32.

    With 24 bits the top value rounded to exactly 1.0 (bits + 0.5 is not representable above 2^23), which made
    the Gumbel noise -log(-log(1)) = +inf; on a -inf (suppressed or filtered) logit that is NaN, and argmax picks
    NaN: a suppressed id (e.g. a codec control id >= 2048) came out about once in 2^24 token draws.
    """
    return (bits.to(torch.float32) + 0.5) * (1.0 / (1 << UNIFORM_BITS))


def hash_bits(seed: torch.Tensor, counter: torch.Tensor, n: int) -> torch.Tensor:
    """[B, n] int64 in [0, 2^23): the top 23 bits of the hash of (seed[b], counter[b], column)."""
    stream = _mix64(_mix64(seed) + counter * _GOLDEN)
    column = torch.arange(1, n + 1, device=seed.device, dtype=torch.int64)
    return _shr(_mix64(stream[:, None] + column[None, :] * _GOLDEN), 64 - UNIFORM_BITS)


def uniform(seed: torch.Tensor, counter: torch.Tensor, n: int) -> torch.Tensor:
    """[B, n] floats in (0, 1), a pure function of (seed[b], counter[b], column)."""
    return unit_interval(hash_bits(seed, counter, n))


def warp(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """The sampling-only warpers, in order: temperature -> top-k -> top-p."""
    return apply_top_p(apply_top_k(apply_temperature(logits, temperature), top_k), top_p)


def draw(
    logits: torch.Tensor,
    do_sample: torch.Tensor,
    temperature: torch.Tensor,
    top_k: torch.Tensor,
    top_p: torch.Tensor,
    seed: torch.Tensor,
    counter: torch.Tensor,
    counter_offset: int = 0,
    out: torch.Tensor | None = None,
    index: torch.Tensor | None = None,
) -> torch.Tensor:
    """Processed logits [B, V] -> ids [B]: warp + Gumbel-max where do_sample, else argmax of the input. The noise's
    counter is `counter + counter_offset`; `out` [B] int64 (any stride) receives the ids when given. With `index`
    [B], the five sampling parameters are per-slot tables and row b's are at `index[b]`."""
    if index is not None:
        do_sample, temperature, top_k, top_p, seed = (t[index] for t in (do_sample, temperature, top_k, top_p, seed))
    if counter_offset:
        counter = counter + counter_offset
    greedy = logits.argmax(dim=-1)
    gumbel = -torch.log(-torch.log(uniform(seed, counter, logits.shape[-1])))
    sampled = (warp(logits, temperature, top_k, top_p) + gumbel).argmax(dim=-1)
    ids = torch.where(do_sample, sampled, greedy)
    return ids if out is None else out.copy_(ids)


def talker_scores(
    logits: torch.Tensor,
    penalty: torch.Tensor,
    seen: torch.Tensor,
    generated: torch.Tensor,
    min_new_tokens: torch.Tensor,
    suppressed: torch.Tensor,
    eos_id: int,
) -> torch.Tensor:
    """The talker's processors, in order: repetition penalty -> min new tokens (EOS blocked) -> suppressed ids."""
    x = apply_repetition_penalty(logits.float(), seen, penalty)
    x = block_eos(x, eos_id, generated, min_new_tokens)
    return suppress(x, suppressed)


# `draw` or a function with its signature and results (kernels/sampling.py: `draw` as one Triton kernel).
DrawFn = Callable[..., torch.Tensor]


def sample_talker(
    logits: torch.Tensor,
    params: SlotSampling,
    slots: torch.Tensor,
    seen: torch.Tensor,
    generated: torch.Tensor,
    suppressed: torch.Tensor,
    eos_id: int,
    draw_fn: DrawFn = draw,
) -> torch.Tensor:
    """Codebook-0 ids [B] for the rows of `slots`; `generated` [B] counts the codebook-0 ids drawn so far."""
    x = talker_scores(
        logits, params.repetition_penalty[slots], seen, generated, params.min_new_tokens[slots], suppressed, eos_id
    )
    counter = generated * DRAWS_PER_FRAME
    return draw_fn(
        x,
        params.do_sample[slots],
        params.temperature[slots],
        params.top_k[slots],
        params.top_p[slots],
        params.seed[slots],
        counter,
    )


def draw_talker(
    logits: torch.Tensor,
    slots: torch.Tensor,
    generated: torch.Tensor,
    seen: torch.Tensor,
    params: SlotSampling,
    suppressed: torch.Tensor,
    eos_id: int,
    pending: torch.Tensor,
    drawn: torch.Tensor,
    finished: torch.Tensor,
    draw_fn: DrawFn = draw,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Codebook-0 ids [B] for the rows of `slots` from the talker's logits, and the slots' counters written: `pending`
    the id, `drawn` generated + 1, `finished` (EOS drawn, or max_new_tokens ids). `generated` [B]: the rows' drawn
    counts, gathered before; `seen` [S, V] the slots' histories (read, not written). Returns (ids, finished [B]);
    rows repeating a slot each get their own finished. kernels/sampling.py's `draw_talker` is this in one kernel."""
    ids = sample_talker(logits, params, slots, seen[slots], generated, suppressed, eos_id, draw_fn)
    pending[slots] = ids
    generated = generated + 1
    drawn[slots] = generated
    done = (ids == eos_id) | (generated >= params.max_new_tokens[slots])
    finished[slots] = done
    return ids, done


@dataclass
class SubtalkerRows:
    """The code predictor's sampling parameters for one step's rows, for its 15 draws, and the first draw counter of
    the frame they complete (a draw's is counter + its codebook). Gathered once (`index` None), or, for a draw that
    reads per-slot tables itself (the sampler kernel), the slots' tables and the rows' slots as `index`."""

    do_sample: torch.Tensor
    temperature: torch.Tensor
    top_k: torch.Tensor
    top_p: torch.Tensor
    seed: torch.Tensor
    counter: torch.Tensor
    index: torch.Tensor | None = None

    @classmethod
    def gather(
        cls, params: SlotSampling, slots: torch.Tensor, counter: torch.Tensor, indexed: bool = False
    ) -> "SubtalkerRows":
        """`counter` [B]: each row's frame * DRAWS_PER_FRAME (the step input kernel writes it with its gathers)."""
        tables = (params.sub_do_sample, params.sub_temperature, params.sub_top_k, params.sub_top_p, params.seed)
        if indexed:
            return cls(*tables, counter, index=slots)
        return cls(*(t[slots] for t in tables), counter)


def sample_subtalker(
    logits: torch.Tensor, rows: SubtalkerRows, group: int, draw_fn: DrawFn = draw, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Codebook-`group` ids [B] (1..15) of the rows' frame from the code predictor's logits (into `out` if given)."""
    if draw_fn is draw:
        logits = logits.float()  # the warpers' arithmetic is fp32 (the kernel upcasts each row itself, exactly)
    params = (rows.do_sample, rows.temperature, rows.top_k, rows.top_p, rows.seed)
    return draw_fn(logits, *params, rows.counter, group, out, index=rows.index)
