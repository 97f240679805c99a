"""`F.linear` for a few rows: y = x @ W.T (+ b), a program per (BLOCK_N output features, row) streaming those
features' whole rows of W.

Why: at one row cuBLAS gives a weight few thread blocks: the code predictor's [rows, 2048] x [1024, 2048]^T (its
attention's o_proj, 75 calls a 1.7B step) ran as `nvjet_sm90_tst_8x64_64x16_2x1` on 16 thread blocks, 9.5 or 12 us a
call (runs 149-151). Over all the 1-row step's GEMMs (each weight's time in run 153's tools/bench_skinny_linear.py
times its calls a step): 3,174 us through cuBLAS, 1,615 here.

A row per program (grid axis 1): run 152 timed a first version that put all rows in one program (a [rows, BLOCK_N,
BLOCK_K] product a K chunk at a time); it took the 1-row step from 5.24-5.28 ms to 4.66-4.69 but the 8-row step from
5.12-5.16 to 8.31-8.33. Here the programs of one feature block read the same weights (from L2 after the first), and a
row's bits do not depend on how many rows share the call.

Numerics: fp32 products summed per lane across the K chunks, then across the lanes; the bias added in fp32; one
rounding to x's dtype. cuBLAS sums in another order: the same values within the last bit, not the same bits.
Deterministic: the row kernel has no atomics and no split of K; the dot kernel's optional split-K (`split_k`, used at
K >= 2N by `dot_launch_for(split=True)`, but not on N <= 1024, K < 3N weights from SPLIT_FREE_FROM rows) has the
last program of a feature block add the shares in share order.

Two kernels. `_skinny_linear_kernel`, a program per (BLOCK_N features, row), is the one above.
`_skinny_linear_dot_kernel`, a program per BLOCK_N features for all rows (padded with zeros to 16 or the next power
of 2, ROWS_PAD), reads each weight block once whatever the rows: w [BLOCK_N, BLOCK_K] times x^T [BLOCK_K, ROWS_PAD]
by `tl.dot` a K chunk at a time, fp32 accumulation, one rounding (the weight as the MMA's wide operand, as cuBLAS does
for few rows). A launch with `"dot": True` takes it. A row's bits do not depend on the other rows' values in either
(each MMA output is its row and column alone), but the two kernels sum in different orders.

Both kernels can take a gated input (`silu_gate`): x holds an MLP's gate and up projections side by side and each
program forms SiLU(gate) * up as it loads a chunk, rounded as transformer_fused.silu_mul rounds it, so an MLP's down
projection needs no SiLU kernel before it. Every program of a call recomputes the gate over its share of K for its
rows (the 1.7B talker's down projection at 1 row: 6,144 exps a program, 512 programs); what it saves is the 103
silu_mul launches of a 1.7B step.

Tried and taken out (git history 0a1c0c4): a decoder layer's residual add in the epilogue of its o_proj and down
GEMMs and its RMSNorms in the prologue of its qkv and gate_up GEMMs (the rows' squares summed after the wait, each
chunk normalized as it loads), 206 launches fewer a 1.7B step. Run 189 (H100): 1 row within 0.2%, 16 rows 9.2-9.7%
slower, 32 rows 2.2-2.3% slower; the norm's pass before the K loop and the normalized x cost more than the launches.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from omni.kernels import INTERPRETED
from omni.kernels.programmatic_launch import early_weights, launch_options, wait_for_prior_kernels
from omni.kernels.transformer_fused import silu_mul_reference, silu_times

MAX_ROWS = 16  # a call's default max_rows; the talker's with skinny_linear_dot (32 on most weights with dot_32)
KERNEL_MAX_ROWS = 128  # the most rows a call may take through the kernels (the dot kernel pads to a power of 2)
# The setting with the least time over a 1-row 1.7B step's GEMMs in run 153 (tools/bench_skinny_linear.py): 1,615 us
# against cuBLAS's 3,174 (block_n 8, block_k 512, 4 warps: 1,734).
LAUNCH = {"block_n": 4, "block_k": 1024, "num_warps": 2}
# Under the interpreter each program is a Python call: wide blocks keep the CPU tests' service builds quick (a tiny
# decode step ~150 launches); K of 300 or 2048 spans chunks. The tests also run LAUNCH itself.
LAUNCH_INTERPRETED = {"block_n": 64, "block_k": 256, "num_warps": 4}
LAUNCH_DOT_INTERPRETED = {"dot": True, "block_n": 64, "block_k": 256, "num_warps": 4}


@triton.jit
def _weight_chunk(w_ptr, n, n_ok, K, k0, BLOCK_K: tl.constexpr):
    """The weights of features n at columns k0 .. k0 + BLOCK_K (zeros outside), those columns and their mask."""
    k = k0 + tl.arange(0, BLOCK_K)
    k_ok = k < K
    w = tl.load(w_ptr + n[:, None].to(tl.int64) * K + k[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
    return w, k, k_ok


@triton.jit
def _input_chunk(x_ptrs, mask, up_offset, SILU_GATE: tl.constexpr):
    """x at x_ptrs; with SILU_GATE x is the gate and the result SiLU(gate) * up, the up projection up_offset columns
    on, rounded as silu_mul rounds it. The callers form x_ptrs as the kernels did before the gate (base pointer plus
    the row's offset, then the columns): offsets summed in i32 first gave other code (up to 16% more SASS)."""
    x = tl.load(x_ptrs, mask=mask, other=0.0)
    if SILU_GATE:
        u = tl.load(x_ptrs + up_offset, mask=mask, other=0.0)
        x = silu_times(x.to(tl.float32), u.to(tl.float32), x.dtype)
    return x


@triton.jit
def _row_chunk(acc, w, x_row_ptr, k, k_ok, up_offset, SILU_GATE: tl.constexpr):
    """acc + one K chunk of the row's products, in fp32."""
    x = _input_chunk(x_row_ptr + k, k_ok, up_offset, SILU_GATE)
    return acc + x.to(tl.float32)[None, :] * w.to(tl.float32)


@triton.jit
def _dot_chunk(acc, w, x_ptr, r, r_ok, x_stride, k, k_ok, up_offset, SILU_GATE: tl.constexpr, DOT_FP32: tl.constexpr):
    """acc + w [BLOCK_N, BLOCK_K] times the rows' K chunk transposed, by tl.dot (fp32 accumulation)."""
    mask = k_ok[:, None] & r_ok[None, :]  # before the pointers, as the kernel had it: the same code (session 44)
    xt = _input_chunk(x_ptr + r[None, :] * x_stride + k[:, None], mask, up_offset, SILU_GATE)
    if DOT_FP32:  # the interpreter multiplies bf16 by its raw bits; the upcast is exact
        w = w.to(tl.float32)
        xt = xt.to(tl.float32)
    return tl.dot(w, xt, acc, input_precision="ieee")


@triton.jit
def _skinny_linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    K,
    N,
    x_stride,
    y_stride,
    up_offset,
    HAS_BIAS: tl.constexpr,
    SILU_GATE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    PDL: tl.constexpr,
    EARLY_WEIGHTS: tl.constexpr,
):
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row = tl.program_id(1)
    n_ok = n < N
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    k_first = 0
    if EARLY_WEIGHTS:  # the first chunk's weights before the wait: they do not depend on the kernels ahead
        w, k, k_ok = _weight_chunk(w_ptr, n, n_ok, K, 0, BLOCK_K)
        wait_for_prior_kernels(PDL)
        acc = _row_chunk(acc, w, x_ptr + row * x_stride, k, k_ok, up_offset, SILU_GATE)
        k_first = BLOCK_K
    else:
        wait_for_prior_kernels(PDL)
    for k0 in range(k_first, K, BLOCK_K):
        w, k, k_ok = _weight_chunk(w_ptr, n, n_ok, K, k0, BLOCK_K)
        acc = _row_chunk(acc, w, x_ptr + row * x_stride, k, k_ok, up_offset, SILU_GATE)
    y = tl.sum(acc, axis=1)
    if HAS_BIAS:
        y += tl.load(b_ptr + n, mask=n_ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_stride + n, y.to(y_ptr.dtype.element_ty), mask=n_ok)


@triton.jit
def _skinny_linear_dot_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    K,
    N,
    x_stride,
    y_stride,
    part_ptr,
    ticket_ptr,
    up_offset,
    HAS_BIAS: tl.constexpr,
    SILU_GATE: tl.constexpr,
    ROWS_PAD: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    DOT_FP32: tl.constexpr,
    PDL: tl.constexpr,
    EARLY_WEIGHTS: tl.constexpr,
):
    block = tl.program_id(0)
    n = block * BLOCK_N + tl.arange(0, BLOCK_N)
    r = tl.arange(0, ROWS_PAD)
    n_ok = n < N
    r_ok = r < M
    k_start = 0
    k_stop = K
    if SPLIT_K > 1:  # this program's share of K, in whole chunks
        k_span = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
        k_start = tl.program_id(1) * k_span
        k_stop = k_start + k_span
    acc = tl.zeros((BLOCK_N, ROWS_PAD), dtype=tl.float32)  # y^T: the features along the MMA's M
    k_first = k_start
    if EARLY_WEIGHTS:  # as in the row kernel
        w, k, k_ok = _weight_chunk(w_ptr, n, n_ok, K, k_start, BLOCK_K)
        wait_for_prior_kernels(PDL)
        acc = _dot_chunk(acc, w, x_ptr, r, r_ok, x_stride, k, k_ok, up_offset, SILU_GATE, DOT_FP32)
        k_first = k_start + BLOCK_K
    else:
        wait_for_prior_kernels(PDL)
    for k0 in range(k_first, k_stop, BLOCK_K):
        w, k, k_ok = _weight_chunk(w_ptr, n, n_ok, K, k0, BLOCK_K)
        acc = _dot_chunk(acc, w, x_ptr, r, r_ok, x_stride, k, k_ok, up_offset, SILU_GATE, DOT_FP32)
    if SPLIT_K > 1:
        # Each share's sums go to part [SPLIT_K, ROWS_PAD, N]; the block's last program to finish (by its ticket) adds
        # them in share order, so the bits do not depend on which finished last, and sets the ticket back to 0.
        rn = r[None, :] * N + n[:, None]
        tl.store(part_ptr + tl.program_id(1) * ROWS_PAD * N + rn, acc, mask=n_ok[:, None])
        tl.debug_barrier()  # every thread's share stored before the ticket is taken (which releases them)
        ticket = tl.atomic_add(ticket_ptr + block, 1, sem="acq_rel", scope="gpu")
        if ticket == SPLIT_K - 1:
            acc = tl.zeros((BLOCK_N, ROWS_PAD), dtype=tl.float32)
            for share in tl.static_range(SPLIT_K):  # from L2 (.cg): L1 may hold an earlier call's lines
                acc += tl.load(
                    part_ptr + share * ROWS_PAD * N + rn, mask=n_ok[:, None], other=0.0, cache_modifier=".cg"
                )
            _store_rows(acc, b_ptr, y_ptr, n, r, n_ok, r_ok, y_stride, HAS_BIAS)
            tl.atomic_xchg(ticket_ptr + block, 0, sem="relaxed", scope="gpu")  # ready for the next call
    else:
        _store_rows(acc, b_ptr, y_ptr, n, r, n_ok, r_ok, y_stride, HAS_BIAS)


@triton.jit
def _store_rows(acc, b_ptr, y_ptr, n, r, n_ok, r_ok, y_stride, HAS_BIAS: tl.constexpr):
    """y[r, n] = acc^T (+ bias), rounded once to y's dtype."""
    if HAS_BIAS:
        acc += tl.load(b_ptr + n, mask=n_ok, other=0.0).to(tl.float32)[:, None]
    tl.store(
        y_ptr + r[None, :] * y_stride + n[:, None], acc.to(y_ptr.dtype.element_ty), mask=n_ok[:, None] & r_ok[None, :]
    )


def max_rows_for(weight: torch.Tensor) -> int:
    """Up to how many rows of input the kernel beats cuBLAS on this weight [N, K] (run 153, H200, every GEMM weight of
    the 1.7B talker, the kernel at LAUNCH): 4 at N <= 1024, where cuBLAS took 8-12 us at 1-4 rows and the kernel
    2.3-4.5 (and cuBLAS 5.0-6.2 at 8 rows, the kernel 6.0-7.8); otherwise 1: there the kernel took 1.1-1.8x less time
    than cuBLAS at one row, more at four, and more or less at two by the weight (each row's programs read the weights
    again, from L2; cuBLAS's time barely grows with the rows)."""
    return 4 if weight.shape[0] <= 1024 else 1


def row_launch_for(weight: torch.Tensor) -> dict:
    """The row kernel's launch at 1 row for a weight [N, K] by its shape (`launch_for(by_shape=True)`), from run 162
    (tools/bench_skinny_linear.py, 1 row, cold weights, H200, 27 launches): at K >= 2N 4 features a program,
    2048-wide K chunks, 4 warps (within 1% of each such weight's fastest, where LAUNCH was 10-12% slower); otherwise 2
    features, 1024-wide chunks, 1 warp (within 5% of each weight's fastest; LAUNCH 0-5% slower than it)."""
    n, k = weight.shape
    if k >= 2 * n:
        return {"block_n": 4, "block_k": 2048, "num_warps": 4}
    return {"block_n": 2, "block_k": 1024, "num_warps": 1}


# Rows from which dot_launch_for(split=True) gives [N <= 1024, 2N <= K < 3N] weights no split-K. Run 185 timed it from
# 16; 9 gives every CUDA graph the same launches (buckets are powers of 2: 9-16 rows pad to the 16 bucket), and a call
# of n rows the launch its bucket's padded call takes (n >= 9 exactly when its bucket is), so a padded step's codes
# equal the unpadded step's, as bench_talker_step checks (run 185's 16 gave 1,056 / 1,104 at 5 rows padded to 8: the
# first predictor pass has two rows a slot, 10 unpadded, 16 padded).
SPLIT_FREE_FROM = 9


def dot_launch(block_n: int, block_k: int, num_warps: int = 4, num_stages: int = 3, split_k: int = 1) -> dict:
    """A dot-kernel launch as `skinny_linear` takes it (split_k named only where K is split)."""
    launch = {"dot": True, "block_n": block_n, "block_k": block_k, "num_warps": num_warps, "num_stages": num_stages}
    return {**launch, "split_k": split_k} if split_k > 1 else launch


def dot_launch_for(weight: torch.Tensor, split: bool = False, rows: int = 1) -> dict:
    """The dot kernel's launch for a weight [N, K], from run 159 (tools/bench_skinny_linear.py, cold weights, H200,
    18 launches at 2, 8 and 16 rows; the fastest by N, its time about the same at every row count): N <= 2048 16
    features and 512-wide K chunks, 3 stages; N <= 4096 32 and 256, 4 stages; wider 64 features (128-wide chunks at
    K >= 2048). A guess of 16 / 256 / 4 stages for every weight was 2-29% slower than each weight's fastest at 8
    rows, and with it the 2-16 row steps 2-14% longer (run 159). With `split`, at K >= 2N K shared by 4 programs a
    block of 32 features, 128-wide chunks, 4 stages: run 162 (2, 8 and 16 rows) the fastest there, 9-12% less time
    on the talker's and predictor's down_proj, 0.6-5% on the [1024, 2048] weights; slower on every other weight.
    Except, with `split`, from SPLIT_FREE_FROM `rows` on weights of N <= 1024 and 2N <= K < 3N (the 1.7B code
    predictor's o_proj and small_to_mtp): 64 features a program, 128-wide chunks, 4 stages, no split. In the captured
    1.7B step (H100; tools/sweep_gemm_launch.py, run 182; bench_talker_step A/B against split-K pinned, run 185) that
    took 2.1-2.4% off the 16-row step, 1.6-1.7% off the 32-row one and 0.2% off the 8-row one (whose first predictor
    pass has 16 rows). Below that (run 184: at every dot row count) it added 2.3% to the 8-row step: the time is not
    the kernel's alone, its 16 programs against split-K's 128 share the GPU with the kernels ahead and behind under
    programmatic launch."""
    n, k = weight.shape
    if split and rows >= SPLIT_FREE_FROM and n <= 1024 and 2 * n <= k < 3 * n:
        return dot_launch(64, 128, num_stages=4)
    if split and k >= 2 * n:
        return dot_launch(32, 128, num_stages=4, split_k=4)
    if n <= 2048:
        return dot_launch(16, 512, num_stages=3)
    if n <= 4096:
        return dot_launch(32, 256, num_stages=4)
    return dot_launch(64, 128 if k >= 2048 else 256, num_stages=4)


def dot_stages(launch: dict, early: bool) -> int:
    """The dot kernel's pipeline stages at `launch` (3 if it names none): with early weights one fewer, for the early
    chunk's tiles take a stage's shared memory (run 171: 64 x 256 blocks at 32 padded rows with 4 stages and the chunk
    asked 245,760 bytes of the H200's 232,448)."""
    return max(1, launch.get("num_stages", 3) - early)


# The dot kernel's stages that fit the device's shared memory, by call (device, dtype, its launch options with the
# stages asked), where fewer than asked: the tuned launches fit in bf16, but fp32 tiles take twice the bytes (run 206:
# 64 x 256 blocks at 32 padded rows and 4 stages asked 294,912 bytes of the H100's 232,448). Fewer stages pipeline the
# same loads; the sums and their order are the same.
_STAGES_THAT_FIT: dict[tuple, int] = {}


def launch_fitting(kernel, grid: tuple, args: tuple, key: tuple, options: dict) -> None:
    """`kernel[grid](*args, **options)`, with one stage fewer than options["num_stages"] at a time while the compiled
    kernel asks more shared memory than the device has (Triton's OutOfResources, raised before anything runs), the
    stages that fit remembered under `key` (the call's device and dtype) and the options."""
    key = (*key, *options.items())
    stages = _STAGES_THAT_FIT.get(key, options["num_stages"])
    while True:
        try:
            kernel[grid](*args, **{**options, "num_stages": stages})
            return
        except triton.runtime.errors.OutOfResources:
            if stages == 1:
                raise
            stages -= 1
            _STAGES_THAT_FIT[key] = stages


def dot_from_for(weight: torch.Tensor) -> int:
    """With the dot kernel on (talker setting skinny_linear_dot), from how many rows a weight [N, K] takes it; fewer
    rows take the row kernel. Run 159 (cold weights, 2 rows): the row kernel beat the dot kernel and cuBLAS on every
    weight of N <= 2048 (e.g. the talker's o_proj 4.90 us, dot 5.56, cuBLAS 5.98), and run 153 at up to 4 rows on N <=
    1024 (the dot kernel has only N / 16 programs there: 64 on those weights, 0.8-1.0 TB/s)."""
    n = weight.shape[0]
    return 5 if n <= 1024 else 3 if n <= 2048 else 2


def dot_rows_for(weight: torch.Tensor) -> int:
    """With the dot kernel up to 32 rows (`use_skinny_linear(dot_32=True)`), up to how many rows a weight [N, K]
    takes the kernels: 32 at N <= 2048 or K <= 1024, where run 162's dot kernel (cold weights, 32 rows) took 3-15%
    less time than cuBLAS; else MAX_ROWS (the talker's [12288, 2048] gate_up +5%, codec head +2.5%, [4096, 2048]
    qkv -0.4%)."""
    n, k = weight.shape
    return 32 if n <= 2048 or k <= 1024 else MAX_ROWS


TICKETS = 1 << 16  # feature blocks a split-K call may have (N up to a million at 16 features a block)
_TICKETS: dict[torch.device, torch.Tensor] = {}


def split_tickets(device: torch.device, blocks: int) -> torch.Tensor:
    """The split-K dot kernel's tickets, one per feature block: zeros made once per device (a fixed size, so a CUDA
    graph never holds a buffer that is later replaced) and shared by every call on it, since each call's last program
    of a block sets its ticket back to 0. Sound while the calls on a device run one after another (the talker runs its
    steps on one stream); two at once on two streams would share tickets."""
    if blocks > TICKETS:
        raise ValueError(f"a split-K call of {blocks} feature blocks is more than the {TICKETS} tickets")
    if device not in _TICKETS:
        _TICKETS[device] = torch.zeros(TICKETS, dtype=torch.int32, device=device)
    return _TICKETS[device]


def launch_for(
    weight: torch.Tensor,
    rows: int,
    dot_from: int | None = None,
    by_shape: bool = False,
    interpreted: bool = INTERPRETED,
) -> dict:
    """A call's launch when none is given: from `dot_from` rows up the dot kernel (`dot_launch_for` the weight, with
    split-K where it pays if `by_shape`), below it the row kernel (LAUNCH, or at 1 row `row_launch_for` if
    `by_shape`: run 163 had those launches at 2-4 rows make the step 1.0-3.7% slower). Under the interpreter wide
    blocks whatever the shape (the CPU tests run the GPU launches by name)."""
    dot = dot_from is not None and rows >= dot_from
    if interpreted:
        return LAUNCH_DOT_INTERPRETED if dot else LAUNCH_INTERPRETED
    if dot:
        return dot_launch_for(weight, split=by_shape, rows=rows)
    return row_launch_for(weight) if by_shape and rows == 1 else LAUNCH


def skinny_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    max_rows: int = MAX_ROWS,
    launch: dict | None = None,
    silu_gate: bool = False,
) -> torch.Tensor:
    """`F.linear(x, weight, bias)` through the kernels when x has at most `max_rows` rows (x [..., K], weight [N, K]
    contiguous, bias [N]); otherwise F.linear itself. `launch`: block_n, block_k, num_warps, and with "dot": True the
    dot kernel (num_stages too, 3 if not given, and split_k: K shared by that many programs a feature block, 1 if not
    given); if None, the row kernel at `launch_for`'s (LAUNCH; the talker passes `module_launch`'s).

    `silu_gate`: x is [..., 2K], a gate and an up projection side by side (a fused gate/up GEMM's output), and the
    product is `F.linear(F.silu(gate) * up, weight, bias)`: the kernels form each gated input as they load it, rounded
    as transformer_fused.silu_mul rounds it, so the result has the bits of silu_mul then this function (an MLP's
    down projection without the SiLU kernel before it)."""
    if max_rows > KERNEL_MAX_ROWS:
        raise ValueError(f"max_rows must be at most {KERNEL_MAX_ROWS}, got {max_rows}")
    width = x.shape[-1]
    k = width // 2 if silu_gate else width
    if silu_gate and width != 2 * weight.shape[-1]:
        raise ValueError(f"with silu_gate x must be [..., 2 x {weight.shape[-1]}] (gate, up), got {tuple(x.shape)}")
    rows = x.numel() // width if width else 0
    if rows == 0 or rows > max_rows:
        return F.linear(silu_mul_reference(x[..., :k], x[..., k:]) if silu_gate else x, weight, bias)
    if weight.dim() != 2 or weight.shape[1] != k or not weight.is_contiguous():
        raise ValueError(f"weight must be a contiguous [N, {k}] matrix, got {tuple(weight.shape)}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise ValueError(f"x, weight and bias must share a dtype, got {x.dtype} and {weight.dtype}")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"bias must be [{weight.shape[0]}], got {tuple(bias.shape)}")
    n = weight.shape[0]
    x2 = x.reshape(rows, width)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty(rows, n, dtype=x.dtype, device=x.device)
    early = early_weights()  # the switch as this launch reads it (kernels/programmatic_launch.py)
    launch = launch or launch_for(weight, rows)
    b_arg = bias if bias is not None else weight
    if launch.get("dot"):
        blocks, split_k = triton.cdiv(n, launch["block_n"]), launch.get("split_k", 1)
        rows_pad = max(16, triton.next_power_of_2(rows))  # tl.dot's least 16
        part, tickets = y, y  # not read at split_k 1
        if split_k > 1:
            part = torch.empty(split_k, rows_pad, n, dtype=torch.float32, device=x.device)
            tickets = split_tickets(x.device, blocks)
        options = dict(
            HAS_BIAS=bias is not None, SILU_GATE=silu_gate, ROWS_PAD=rows_pad, BLOCK_N=launch["block_n"],
            BLOCK_K=launch["block_k"], SPLIT_K=split_k, DOT_FP32=INTERPRETED and x.dtype != torch.float32,
            num_warps=launch["num_warps"], num_stages=dot_stages(launch, early), EARLY_WEIGHTS=early,
            **launch_options(),
        )  # fmt: skip
        args = (x2, weight, b_arg, y, rows, k, n, x2.stride(0), y.stride(0), part, tickets, k)
        launch_fitting(_skinny_linear_dot_kernel, (blocks, split_k), args, (x.device, x.dtype), options)
    else:
        _skinny_linear_kernel[(triton.cdiv(n, launch["block_n"]), rows)](
            x2, weight, b_arg, y, k, n, x2.stride(0), y.stride(0), k,
            HAS_BIAS=bias is not None, SILU_GATE=silu_gate, BLOCK_N=launch["block_n"], BLOCK_K=launch["block_k"],
            num_warps=launch["num_warps"], EARLY_WEIGHTS=early, **launch_options(),
        )  # fmt: skip
    return y.reshape(*x.shape[:-1], n)
