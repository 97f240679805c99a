"""One Triton kernel for `omni.talker.sampling.draw`: a whole [V] row per program, V <= 4096.

The PyTorch `draw` is ~45 small kernels (the int64 hash, two logs, temperature, a full sort for top-k, another sort,
softmax, cumsum and scatter for top-p, two argmaxes); the talker's decode step calls it 16 times. This kernel does
the same per row in registers, and every step is the PyTorch step's arithmetic, so the ids are the same:

- greedy rows (do_sample false): argmax of the input logits, first index on ties, as torch.argmax;
- temperature: an IEEE division (`div_rn`; Triton's plain fp32 `/` is approximate on NVIDIA GPUs);
- top-k: the k-th largest value is found by a bisection over the floats' order-preserving int32 keys (exact: only
  comparisons), and values below it are dropped, ties kept, as `apply_top_k`;
- Gumbel noise: the same splitmix64 counter hash in uint64 (the same bits as the int64-wrapping torch code), the same
  23-bit uniform, and -log(-log(u)) with CUDA's own `logf` (libdevice), which is what torch.log runs on CUDA;
- top-p, only for rows with top_p < 1 (with top_p = 1, `apply_top_p` drops only tokens of probability exactly 0,
  more than 100 below the maximum, which the noise, bounded in (-2.8, 16.7), can never lift to the argmax): the
  tokens apply_top_p removes are a prefix of the ascending (value, column) order (a stable sort's), found by a
  bisection over the keys on sums of the softmax probabilities, without sorting (`_top_p_removed`);
- the Gumbel-max argmax over the warped row, first index on ties.

What cannot be bit-identical, and why (tests/test_sampling_kernel.py asserts everything else exactly):
- The top-p cut compares a float sum of probabilities with 1 - top_p, and the sums are taken in another order than
  PyTorch's (whose own CPU and CUDA orders differ too). A token whose exact cumulative probability lies within
  `top_p_tolerance(V)` of the cut may fall on either side; `top_p_boundary_rows` finds the rows where that can change
  the id. On the CPU, torch.sort is not stable, so which of tied tokens at the cut is removed is PyTorch's choice there.
- Under TRITON_INTERPRET=1 (CPU tests) the logs and exps are numpy's, which differ from torch's CPU ones by up to
  4 ulps, so the noise may differ by a few ulps; on a GPU both are CUDA's `logf`/`expf`.
"""

import torch
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.programmatic_launch import launch_options, wait_for_prior_kernels
from triton.language.extra import libdevice

from omni.talker.sampling import DRAWS_PER_FRAME, SlotSampling

MAX_VOCAB = 4096  # one row in registers per program (the talker's vocabulary is 3072, the predictor's 2048)
# Globals a kernel reads must be tl.constexpr instances (the compiler refuses others; the interpreter does not check).
UNIFORM_BITS = 23  # as omni.talker.sampling.UNIFORM_BITS: the top 23 bits of the hash, scaled by 2^-23
UNIFORM_SHIFT = tl.constexpr(64 - UNIFORM_BITS)
UNIFORM_SCALE = tl.constexpr(2.0**-UNIFORM_BITS)
# splitmix64 constants as uint64 (omni.talker.sampling holds the same bits as signed int64).
GOLDEN = tl.constexpr(0x9E3779B97F4A7C15)
MIX1 = tl.constexpr(0xBF58476D1CE4E5B9)
MIX2 = tl.constexpr(0x94D049BB133111EB)


@triton.jit
def _log(x, LIBDEVICE: tl.constexpr):
    if LIBDEVICE:
        return libdevice.log(x)  # CUDA's logf, as torch.log on CUDA (tl.log may lower to an approximation)
    else:
        return tl.log(x)  # the interpreter has no libdevice


@triton.jit
def _exp(x, LIBDEVICE: tl.constexpr):
    if LIBDEVICE:
        return libdevice.exp(x)  # CUDA's expf, as torch's softmax (tl.exp lowers to the approximate ex2)
    else:
        return tl.exp(x)


@triton.jit
def _mix64(z):
    """The splitmix64 finalizer on uint64 (wrapping products, logical shifts), as sampling._mix64 on int64."""
    z = (z ^ (z >> 30)) * MIX1
    z = (z ^ (z >> 27)) * MIX2
    return z ^ (z >> 31)


@triton.jit
def _uniform_bits(seed, counter, cols):
    """The top 23 bits of the hash of (seed, counter, column cols + 1), as sampling.uniform (int32)."""
    stream = _mix64(_mix64(seed.to(tl.uint64, bitcast=True)) + counter.to(tl.uint64, bitcast=True) * GOLDEN)
    z = _mix64(stream + (cols + 1).to(tl.uint64) * GOLDEN)
    return (z >> UNIFORM_SHIFT).to(tl.int32)


@triton.jit
def _gumbel(bits, LIBDEVICE: tl.constexpr):
    """-log(-log(u)) with u = (bits + 0.5) / 2^23 (exact in fp32, strictly inside (0, 1)), as sampling.draw."""
    u = (bits.to(tl.float32) + 0.5) * UNIFORM_SCALE
    return -_log(-_log(u, LIBDEVICE), LIBDEVICE)


@triton.jit
def _order_key(x):
    """int32 keys ordered as the floats (no NaN); -0.0 gets +0.0's key, since the float comparisons tie them."""
    bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
    return tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


@triton.jit
def _first_argmax(score, cols, BLOCK: tl.constexpr):
    """torch.argmax of a row: the first column of the maximum, or of the first NaN (torch treats NaN as the max)."""
    best = tl.max(score, axis=0)
    first = tl.min(tl.where(score == best, cols, BLOCK), axis=0)
    first_nan = tl.min(tl.where(score != score, cols, BLOCK), axis=0)
    return tl.where(first_nan < BLOCK, first_nan, first)


@triton.jit
def _kth_largest_key(key, in_row, k):
    """The key of the k-th largest value (ties counted), 1 <= k <= the row length: the largest key t with at least
    k keys >= t, by bisection over the int32 range (32 halvings of an interval of < 2^32 keys)."""
    lo = tl.min(tl.where(in_row, key, 0x7FFFFFFF), axis=0).to(tl.int64)  # k <= length: at least k keys >= lo
    hi = tl.max(tl.where(in_row, key, -0x7FFFFFFF - 1), axis=0).to(tl.int64)
    for _ in range(32):
        mid = lo + (hi - lo + 1) // 2
        enough = tl.sum((in_row & (key >= mid)).to(tl.int32), axis=0) >= k
        lo = tl.where(enough, mid, lo)
        hi = tl.where(enough, hi, mid - 1)
    return lo


@triton.jit
def _kth_largest_key_radix(key, in_row, k):
    """`_kth_largest_key` by a radix select over the keys' 4 bytes, top byte first: a pass counts the candidates (the
    keys sharing the bytes chosen so far) by their next byte in one histogram, and keeps the byte at which the count of
    candidates with that byte or a larger one reaches the k still wanted. 4 passes of a histogram, a suffix sum and two
    reductions, where the bisection makes 32 reductions (`draw`'s radix_top_k; tools/bench_draw.py times both: run
    176, 5% faster at 2,048 ids and 8% slower at 3,072, so it stays off)."""
    u = key ^ (-0x7FFFFFFF - 1)  # the sign bit flipped: the keys' order is the unsigned order of these bits
    bins = tl.arange(0, 256)
    need = k.to(tl.int32)
    prefix = need * 0  # the bytes chosen so far, in place
    for p in tl.static_range(4):
        shift = 24 - 8 * p
        if p == 0:
            candidate = in_row
        else:
            candidate = in_row & ((u & ~((1 << (shift + 8)) - 1)) == prefix)
        count = tl.histogram((u >> shift) & 0xFF, 256, mask=candidate)
        at_least = tl.cumsum(count, axis=0, reverse=True)  # candidates whose byte is >= each bin
        byte = tl.max(tl.where(at_least >= need, bins, 0), axis=0)
        need -= tl.sum(tl.where(bins > byte, count, 0), axis=0)
        prefix |= byte << shift
    return prefix ^ (-0x7FFFFFFF - 1)


@triton.jit
def _top_p_removed(x, cols, in_row, top_p, LIBDEVICE: tl.constexpr):
    """apply_top_p's removed tokens, without sorting: sorted ascending by (value, column) (a stable sort's order),
    a token is removed when the cumulative probability up to it is <= 1 - top_p, except the last (the maximum).

    The cumulative probability grows along that order, so the removed tokens are a prefix of it: every value group
    whose mass with all smaller values is <= 1 - top_p (a bisection over the keys finds the largest such value),
    then, in the next group (tokens tied at one value, each of probability p), those of rank r (1-based, by column)
    with mass below + r * p <= 1 - top_p. The masses are sums in a fixed order, so they grow with the key.
    """
    key = _order_key(x)
    # softmax as PyTorch's CUDA kernel writes it: exp(x - max) / sum.
    top = tl.max(x, axis=0)
    e = _exp(x - top, LIBDEVICE)
    p = tl.where(in_row, tl.math.div_rn(e, tl.sum(e, axis=0)), 0.0)
    cut = 1.0 - top_p
    lo = tl.min(tl.where(in_row, key, 0x7FFFFFFF), axis=0).to(tl.int64) - 1  # no mass below the smallest key
    top_key = tl.max(tl.where(in_row, key, -0x7FFFFFFF - 1), axis=0)
    hi = top_key.to(tl.int64)
    for _ in range(33):  # the largest key whose mass up to it is <= cut (an interval of <= 2^32 + 1 keys)
        mid = lo + (hi - lo + 1) // 2
        fits = tl.sum(tl.where(key <= mid, p, 0.0), axis=0) <= cut
        lo = tl.where(fits, mid, lo)
        hi = tl.where(fits, hi, mid - 1)
    below = tl.sum(tl.where(key <= lo, p, 0.0), axis=0)
    next_key = tl.min(tl.where(in_row & (key > lo), key, 0x7FFFFFFF), axis=0)
    in_next = in_row & (key == next_key)
    rank = tl.cumsum(in_next.to(tl.int32), axis=0)  # 1-based rank by column inside the group at the cut
    removed = (key <= lo) | (in_next & (below + rank.to(tl.float32) * p <= cut))
    last = tl.max(tl.where(in_row & (key == top_key), cols, -1), axis=0)  # the last in the order: always kept
    return removed & in_row & (cols != last)


@triton.jit
def _warp_and_draw(
    x,
    cols,
    in_row,
    vocab,
    p,
    do_sample_ptr,
    temperature_ptr,
    top_k_ptr,
    top_p_ptr,
    seed_ptr,
    counter,
    BLOCK: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    RADIX: tl.constexpr,
):
    """The id `draw` picks from one processed fp32 row `x`, with the parameters at index `p` of their tensors."""
    chosen = _first_argmax(x, cols, BLOCK)  # greedy: the processed, unwarped logits
    if tl.load(do_sample_ptr + p):
        x = tl.math.div_rn(x, tl.load(temperature_ptr + p))
        k = tl.minimum(tl.load(top_k_ptr + p), vocab)
        if (k > 0) & (k < vocab):  # k = 0 is off and k >= V keeps everything (the V-th largest is the minimum)
            key = _order_key(x)
            if RADIX:
                kth = _kth_largest_key_radix(key, in_row, k)
            else:
                kth = _kth_largest_key(key, in_row, k)
            x = tl.where(key >= kth, x, -float("inf"))
        top_p = tl.load(top_p_ptr + p)
        if top_p < 1.0:
            x = tl.where(_top_p_removed(x, cols, in_row, top_p, LIBDEVICE), -float("inf"), x)
        noise = _gumbel(_uniform_bits(tl.load(seed_ptr + p), counter, cols), LIBDEVICE)
        chosen = _first_argmax(x + noise, cols, BLOCK)
    return chosen


@triton.jit
def _draw_kernel(
    logits_ptr,
    logits_stride,
    vocab,
    index_ptr,
    do_sample_ptr,
    temperature_ptr,
    top_k_ptr,
    top_p_ptr,
    seed_ptr,
    counter_ptr,
    counter_offset,
    out_ptr,
    out_stride,
    INDEXED: tl.constexpr,
    BLOCK: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    RADIX: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < vocab
    # Columns past the vocabulary read -inf: they never win an argmax and count in no top-k or top-p sum.
    x = tl.load(logits_ptr + row.to(tl.int64) * logits_stride + cols, mask=in_row, other=-float("inf"))
    x = x.to(tl.float32)  # the exact upcast PyTorch's division by an fp32 temperature does
    p = row  # where the row's sampling parameters are
    if INDEXED:
        p = tl.load(index_ptr + row)
    counter = tl.load(counter_ptr + row) + counter_offset
    chosen = _warp_and_draw(
        x, cols, in_row, vocab, p, do_sample_ptr, temperature_ptr, top_k_ptr, top_p_ptr, seed_ptr, counter, BLOCK,
        LIBDEVICE, RADIX,
    )  # fmt: skip
    tl.store(out_ptr + row.to(tl.int64) * out_stride, chosen.to(tl.int64))


@triton.jit
def _draw_talker_kernel(
    logits_ptr,
    logits_stride,
    vocab,
    slots_ptr,
    generated_ptr,
    seen_ptr,
    seen_stride,
    penalty_ptr,
    min_new_ptr,
    max_new_ptr,
    suppressed_ptr,
    eos_id,
    do_sample_ptr,
    temperature_ptr,
    top_k_ptr,
    top_p_ptr,
    seed_ptr,
    ids_ptr,
    pending_ptr,
    drawn_ptr,
    finished_ptr,
    finished_rows_ptr,
    DRAWS_PER_FRAME: tl.constexpr,
    BLOCK: tl.constexpr,
    LIBDEVICE: tl.constexpr,
    RADIX: tl.constexpr,
    PDL: tl.constexpr,
):
    wait_for_prior_kernels(PDL)
    row = tl.program_id(0)
    slot = tl.load(slots_ptr + row)
    cols = tl.arange(0, BLOCK)
    in_row = cols < vocab
    x = tl.load(logits_ptr + row.to(tl.int64) * logits_stride + cols, mask=in_row, other=-float("inf"))
    x = x.to(tl.float32)  # talker_scores' exact upcast
    # The processors, as talker_scores: repetition penalty over the slot's history, EOS blocked before
    # min_new_tokens, the suppressed ids.
    seen = tl.load(seen_ptr + slot * seen_stride + cols, mask=in_row, other=0) != 0
    penalty = tl.load(penalty_ptr + slot)
    x = tl.where(seen, tl.where(x < 0, x * penalty, tl.math.div_rn(x, penalty)), x)
    generated = tl.load(generated_ptr + row)
    x = tl.where((cols == eos_id) & (generated < tl.load(min_new_ptr + slot)), -float("inf"), x)
    x = tl.where(tl.load(suppressed_ptr + cols, mask=in_row, other=0) != 0, -float("inf"), x)
    chosen = _warp_and_draw(
        x, cols, in_row, vocab, slot, do_sample_ptr, temperature_ptr, top_k_ptr, top_p_ptr, seed_ptr,
        generated * DRAWS_PER_FRAME, BLOCK, LIBDEVICE, RADIX,
    ).to(tl.int64)  # fmt: skip
    # The slot's counters, as the runner kept them: the pending id, one more drawn, finished on EOS or at the limit.
    drawn = generated + 1
    finished = (chosen == eos_id) | (drawn >= tl.load(max_new_ptr + slot))
    tl.store(ids_ptr + row, chosen)
    tl.store(finished_rows_ptr + row, finished)
    tl.store(pending_ptr + slot, chosen)
    tl.store(drawn_ptr + slot, drawn)
    tl.store(finished_ptr + slot, finished)


def _check_row_params(b: int, **params: tuple[torch.Tensor, torch.dtype]) -> None:
    for name, (t, dtype) in params.items():
        if tuple(t.shape) != (b,) or t.dtype != dtype:
            raise ValueError(f"{name} must be a [{b}] {dtype} tensor, got {list(t.shape)} {t.dtype}")


def _check_logits(logits: torch.Tensor) -> None:
    if logits.dim() != 2 or not 1 <= logits.shape[1] <= MAX_VOCAB:
        raise ValueError(f"logits must be [B, V] with 1 <= V <= {MAX_VOCAB}, got {list(logits.shape)}")
    if logits.stride(1) != 1:
        raise ValueError("logits need a contiguous last dim")


def _check_sampling(n: int, do_sample, temperature, top_k, top_p, seed) -> list[torch.Tensor]:
    """The five sampling parameters, each [n] (n rows, or n slots when indexed), contiguous for the kernel."""
    _check_row_params(
        n,
        do_sample=(do_sample, torch.bool),
        temperature=(temperature, torch.float32),
        top_k=(top_k, torch.int64),
        top_p=(top_p, torch.float32),
        seed=(seed, torch.int64),
    )
    return [t.contiguous() for t in (do_sample, temperature, top_k, top_p, seed)]


def _launch_options(vocab: int, num_warps: int | None, radix_top_k: bool) -> dict:
    """A row per program; `num_warps` None: 4 up to 1,024 columns, else 8 (tools/bench_draw.py times others: 1, 2
    and 4 warps took 2.8x, 1.6x and 1.1x the time of 8 on a sampled 2,048-id row, run 176);
    `radix_top_k`: the top-k search by radix select rather than bisection (the same ids)."""
    block = triton.next_power_of_2(vocab)
    if num_warps is None:
        num_warps = 4 if block <= 1024 else 8
    elif num_warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps must be 1, 2, 4, 8 or 16, got {num_warps}")
    return dict(BLOCK=block, LIBDEVICE=not INTERPRETED, RADIX=radix_top_k, num_warps=num_warps, **launch_options())


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
    num_warps: int | None = None,
    radix_top_k: bool = False,
) -> torch.Tensor:
    """`omni.talker.sampling.draw` in one kernel: logits [B, V] (V <= 4096, any float dtype, last dim contiguous)
    -> ids int64 [B], written into `out` (any stride) when given: the code predictor's draws go straight into their
    row of the frame's codes. Parameters per row: do_sample bool, temperature and top_p float32, top_k, seed and
    counter int64; the noise's counter is counter + `counter_offset` (the draw's codebook), added in the kernel. With
    `index` [B] int64, the five sampling parameters are per-slot tables read at row b's `index[b]` (no gathers). No
    host sync and no value checks on the device tensors, so it can be captured in a CUDA graph. `num_warps` (the
    launch's warps a row; None: `_launch_options`' choice) and `radix_top_k` (the top-k search by radix select) are
    speed choices: the ids do not depend on them."""
    _check_logits(logits)
    b, vocab = logits.shape
    if index is not None:
        _check_row_params(b, index=(index, torch.int64))
    params = _check_sampling(b if index is None else do_sample.shape[0], do_sample, temperature, top_k, top_p, seed)
    _check_row_params(b, counter=(counter, torch.int64))
    if out is None:
        out = torch.empty(b, dtype=torch.int64, device=logits.device)
    elif tuple(out.shape) != (b,) or out.dtype != torch.int64:
        raise ValueError(f"out must be a [{b}] int64 tensor, got {list(out.shape)} {out.dtype}")
    if b == 0:
        return out
    _draw_kernel[(b,)](
        logits,
        logits.stride(0),
        vocab,
        counter if index is None else index.contiguous(),  # unread when not indexed
        *params,
        counter.contiguous(),
        counter_offset,
        out,
        out.stride(0),
        INDEXED=index is not None,
        **_launch_options(vocab, num_warps, radix_top_k),
    )
    return out


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
    radix_top_k: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`omni.talker.sampling.draw_talker` in one kernel: the talker's processors (repetition penalty over `seen`,
    EOS blocked before min_new_tokens, `suppressed`), the draw, and the slots' counters written (`pending` id,
    `drawn` = generated + 1, `finished`), every per-slot value read at its slot (no gathers). logits [B, V] of the
    rows of `slots` [B]; generated [B] (the rows' drawn counts, gathered before: the kernel writes `drawn`); seen
    [S, V] bool; `params` a SlotSampling of S slots; suppressed [V] bool; `radix_top_k` as `draw`'s. Returns ids [B]
    and finished [B]."""
    _check_logits(logits)
    b, vocab = logits.shape
    n = seen.shape[0]
    _check_row_params(b, slots=(slots, torch.int64), generated=(generated, torch.int64))
    if tuple(seen.shape) != (n, vocab) or seen.dtype != torch.bool or seen.stride(1) != 1:
        raise ValueError(f"seen must be [slots, {vocab}] bool with a contiguous last dim, got {list(seen.shape)}")
    _check_row_params(
        n,
        repetition_penalty=(params.repetition_penalty, torch.float32),
        min_new_tokens=(params.min_new_tokens, torch.int64),
        max_new_tokens=(params.max_new_tokens, torch.int64),
        pending=(pending, torch.int64),
        drawn=(drawn, torch.int64),
        finished=(finished, torch.bool),
    )
    _check_row_params(vocab, suppressed=(suppressed, torch.bool))
    sampling = _check_sampling(n, params.do_sample, params.temperature, params.top_k, params.top_p, params.seed)
    for name, t in (("pending", pending), ("drawn", drawn), ("finished", finished)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (the kernel writes it)")
    ids = torch.empty(b, dtype=torch.int64, device=logits.device)
    finished_rows = torch.empty(b, dtype=torch.bool, device=logits.device)
    if b == 0:
        return ids, finished_rows
    _draw_talker_kernel[(b,)](
        logits,
        logits.stride(0),
        vocab,
        slots.contiguous(),
        generated.contiguous(),
        seen,
        seen.stride(0),
        params.repetition_penalty.contiguous(),
        params.min_new_tokens.contiguous(),
        params.max_new_tokens.contiguous(),
        suppressed.contiguous(),
        eos_id,
        *sampling,
        ids,
        pending,
        drawn,
        finished,
        finished_rows,
        DRAWS_PER_FRAME=DRAWS_PER_FRAME,
        **_launch_options(vocab, None, radix_top_k),
    )
    return ids, finished_rows


# ---- the kernel's noise on its own, and where its top-p cut may differ (tests and tools/bench_talker_step.py) ----


@triton.jit
def _noise_kernel(seed_ptr, counter_ptr, bits_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    bits = _uniform_bits(tl.load(seed_ptr + row), tl.load(counter_ptr + row), cols)
    tl.store(bits_ptr + row.to(tl.int64) * vocab + cols, bits, mask=cols < vocab)


@triton.jit
def _gumbel_kernel(bits_ptr, out_ptr, n, BLOCK: tl.constexpr, LIBDEVICE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = tl.load(bits_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, _gumbel(bits, LIBDEVICE), mask=offs < n)


def uniform_bits(seed: torch.Tensor, counter: torch.Tensor, vocab: int) -> torch.Tensor:
    """int32 [B, vocab]: the kernel's 23-bit integers (sampling.uniform is (these + 0.5) / 2^23)."""
    out = torch.empty(seed.shape[0], vocab, dtype=torch.int32, device=seed.device)
    _noise_kernel[(seed.shape[0],)](
        seed.contiguous(), counter.contiguous(), out, vocab, BLOCK=triton.next_power_of_2(vocab)
    )
    return out


def gumbel(bits: torch.Tensor) -> torch.Tensor:
    """fp32 noise -log(-log((bits + 0.5) / 2^23)) as the kernel computes it, for int32 bits of any shape."""
    flat = bits.to(torch.int32).contiguous().view(-1)
    out = torch.empty(flat.shape, dtype=torch.float32, device=bits.device)
    block = 1 << 16
    _gumbel_kernel[(triton.cdiv(flat.numel(), block),)](flat, out, flat.numel(), BLOCK=block, LIBDEVICE=not INTERPRETED)
    return out.view(bits.shape)


def top_p_tolerance(vocab: int) -> float:
    """A bound on how far an fp32 cumulative probability over `vocab` sorted tokens can be from the exact one, for
    both this kernel and PyTorch: each term has a few roundings (exp, the division by a sum of `vocab` terms) and a
    running sum of n terms is off by at most n units of 2^-24 of its value, which is <= 1."""
    return (2 * vocab + 32) * 2.0**-24


def top_p_boundary_rows(warped: torch.Tensor, noise: torch.Tensor, top_p: torch.Tensor, sampled: torch.Tensor):
    """Rows whose id may depend on which side of the top-p cut a token falls within `top_p_tolerance`: the kernel may
    differ from `sampling.draw` only there (given the same noise). bool [B].

    warped [B, V]: the logits after temperature and top-k (both exact in the kernel); noise [B, V]: the Gumbel noise;
    top_p [B]; sampled [B] bool. Exact probabilities in float64: a token's cumulative probability in ascending order
    is the mass of smaller values plus its own, up to the mass of its whole tie group (whichever order ties take).
    A token is surely removed when that whole range is below the cut by more than the tolerance, surely kept when it
    is above it by more (or it is the row's single largest value), otherwise uncertain. A row is at the boundary when
    the argmax over the sure and the uncertain tokens is an uncertain one (or ties one).
    """
    x = warped.double().cpu()
    p = x.softmax(dim=-1)
    cut = (1 - top_p.cpu()).double()[:, None]  # 1 - top_p is rounded to fp32 in both, as here
    tol = top_p_tolerance(x.shape[1])
    ascending, order = x.sort(dim=-1)
    mass = torch.cat([torch.zeros_like(p[:, :1]), p.gather(-1, order).cumsum(dim=-1)], dim=-1)  # mass of the first i
    below = mass.gather(-1, torch.searchsorted(ascending, x, right=False))  # the mass of smaller values
    lowest = below + p  # a token's cumulative probability if it comes first among its ties ...
    highest = mass.gather(-1, torch.searchsorted(ascending, x, right=True))  # ... or last
    ties = torch.searchsorted(ascending, x, right=True) - torch.searchsorted(ascending, x, right=False)
    single_max = (x == ascending[:, -1:]) & (ties == 1)
    finite = torch.isfinite(x)
    surely_removed = (highest + tol < cut) | ~finite
    surely_kept = (lowest - tol > cut) | single_max
    uncertain = ~surely_removed & ~surely_kept
    score = torch.where(surely_removed, -torch.inf, x.float() + noise.float().cpu())
    at_best = score == score.max(dim=-1, keepdim=True).values
    boundary = (at_best & uncertain).any(dim=-1)
    return boundary & sampled.cpu() & (top_p.cpu() < 1)
