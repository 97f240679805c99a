"""Talker decode step on a GPU: CUDA-graph replay against eager, for correctness and time per step.

Builds the released 0.6B / 1.7B talker shapes (config values from tts-architectures.md §A1.1) with random weights
on the device (no download), prefills every slot with a random prompt, then

1. correctness: three runners over the same weights and prompts (greedy and seeded-sampling slots mixed) step the
   same mixed batches (padding rows included): graph replay must equal the eager padded step bit for bit; the share
   of codes equal to the unpadded eager `decode_step` is reported (other batch shapes may pick other GEMM kernels);
2. the decode-attention kernel (reads each slot's live length in place), alone and with the fused layer kernels
   (talker_fused.py), against the masked PyTorch attention over all `max_len` positions: share of equal codes and
   the hidden-state difference over the same steps, in bf16 and in fp32;
3. the fused sampler kernel (kernels/sampling.py) against `sampling.draw`: the Gumbel noise of all 2^23 uniforms and
   the hash bits must be bit-identical, ids on random rows must be equal except on the documented top-p boundary rows
   (`top_p_boundary_rows`), and a runner's codes with and without the kernel must be equal in fp32; any other
   difference raises. Runs with the mode fused+sampler; --sampler-only runs just this check (seconds);
4. timing: ms per decode step at each batch size through `TalkerGraphs.decode_step`, per mode (and the eager
   `decode_step` with --eager); --profile prints the top CUDA kernels of one eager step at the largest batch.

Every slot is prefilled with --prompt-len positions, so the live length during the timed steps is about that: 160 is
the middle of a 10 s utterance after a ~100-position prompt.

    python tools/bench_talker_step.py --models 0.6B,1.7B --batches 1,16,64,256 --max-len 2048 --profile
    python tools/bench_talker_step.py --models 1.7B --modes fused,fused+sampler   # the sampler kernel's gain
"""

import argparse
import copy
import json
import os
import re
import time
from collections import defaultdict
from functools import partial

import torch
import torch.nn.functional as F
from omni.kernels import wide_linear
from omni.kernels.decode_attention import SHORT_CACHE
from omni.kernels.programmatic_launch import set_programmatic_launch
from omni.kernels.skinny_linear import dot_launch

from omni.fp8 import FP8_DTYPE, to_fp8
from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.talker_fused import (
    fuse_talker_kernels,
    module_linear,
    skinny_gemms,
    use_silu_down,
    use_skinny_linear,
    use_wide_linear,
)
from omni.models.qwen3_tts.tiny import SHAPES, tiny_config
from omni.talker.cuda_graphs import TalkerGraphs
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams, draw_talker

PROMPT_LEN = 24  # correctness runs
WARMUP_STEPS = 3  # untimed steps before a timing's iters (time_steps, profile_replays)
# A --profile-kernel regex matching any of these names profiles GEMMs, so its calls get their weights (gemm_calls):
# the skinny kernels, and cuBLAS's kernels on an H100/H200 (nvjet, the sm90 xmma/cutlass GEMMs).
GEMM_KERNEL_NAMES = "_skinny_linear_kernel _skinny_linear_dot_kernel nvjet_sm90_tst sm90_xmma_gemm cutlass3x_sm90_gemm"


def check_len(steps: int) -> int:
    """Positions per slot in a correctness run of `steps` steps: past SHORT_CACHE, so the talker's attention takes the
    launch the timed steps' and the service's (max_context) caches take. Run 205's checks had 34 positions, the code
    predictor's 1-warp launch."""
    return max(PROMPT_LEN + steps + 8, SHORT_CACHE + 1)


def build_talker(name: str, dtype: torch.dtype, device: str) -> tuple[Qwen3TTSTalker, Qwen3TTSConfig]:
    # The released talker and code-predictor shapes (the 1.7B adds the 2048 -> 1024 projection by itself).
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice", **SHAPES[name.lower()]))
    with torch.device(device):
        talker = Qwen3TTSTalker(config.talker)
    return talker.to(dtype).eval(), config


def params_for(slot: int) -> SamplingParams:
    """Even slots greedy, odd slots seeded sampling (official defaults); EOS blocked so every slot keeps going."""
    return SamplingParams(seed=1000 + slot, do_sample=slot % 2 == 1, subtalker_dosample=slot % 2 == 1,
                          min_new_tokens=10_000, max_new_tokens=10_000)  # fmt: skip


def prefill_all(runner: TalkerRunner, seed: int, prompt_len: int = PROMPT_LEN) -> None:
    gen = torch.Generator().manual_seed(seed)
    for slot in range(runner.num_slots):
        prompt = TalkerPrompt(
            text_ids=torch.randint(0, 150_000, (prompt_len,), generator=gen),
            codec_ids=torch.full((prompt_len,), NO_ID),
            trailing_ids=torch.randint(0, 150_000, (8,), generator=gen),
        )
        p = params_for(slot)
        p.max_new_tokens = runner.max_len - prompt_len
        runner.prefill(slot, prompt, p)


def compare_paths(talker, config, steps: int, device: str, fused: bool) -> dict:
    """The same slots stepped eagerly by two runners: the optimised path (the decode-attention kernel, and with
    `fused` the fused layer kernels on a copy of the talker) against the plain PyTorch one (masked SDPA)."""
    slots, max_len = 64, check_len(steps)
    fast_talker = talker
    if fused:
        fast_talker = copy.deepcopy(talker)
        fuse_talker_kernels(fast_talker)
    runners = [
        TalkerRunner(fast_talker, config, slots, max_len, device, decode_kernel=True),
        TalkerRunner(talker, config, slots, max_len, device, decode_kernel=False),
    ]
    return compare_close(runners, steps)


def compare_close(runners: list[TalkerRunner], steps: int) -> dict:
    """Two runners of the same slots, prefilled alike here and stepped eagerly over all their slots, for paths that
    are not the same bits: how many codes agree, and how far apart the hidden states are after the first step (both
    from the same prefill: one step's difference) against their scale."""
    for r in runners:
        prefill_all(r, seed=0)
    batch = torch.arange(runners[0].num_slots, device=runners[0].device)
    first_hidden_diff = None
    equal_codes = total_codes = 0
    for step in range(steps):
        k_codes, _ = runners[0].decode_step(batch)
        s_codes, _ = runners[1].decode_step(batch)
        if step == 0:  # after one step both started from the same prefill: the difference of one step
            first_hidden_diff = float((runners[0].last_hidden.float() - runners[1].last_hidden.float()).abs().max())
        equal_codes += int((k_codes == s_codes).sum())
        total_codes += k_codes.numel()
    scale = float(runners[1].last_hidden.float().abs().max())
    return {"codes_equal": f"{equal_codes}/{total_codes}", "first_step_hidden_max_abs_diff": first_hidden_diff,
            "hidden_max_abs": scale}  # fmt: skip


def check_fp8_writes(device: str) -> dict:
    """On the device: the K/V write kernels store into fp8 caches the bits `to_fp8` gives (ties to even, saturation
    at 448; the CPU tests check the interpreter's path, this the hardware's conversion), write_kv from bf16 and fp32
    and norm_rope_write_kv against its own bf16 write rounded."""
    from omni.kernels.kv_write import norm_rope_write_kv, write_kv

    gen = torch.Generator(device="cpu").manual_seed(3)
    edges = torch.tensor([1.0625, -1.1875, 2.0**-10, 3 * 2.0**-10, 448.0, 460.0, -1000.0, 7.9628])
    out = {}
    for dtype in (torch.bfloat16, torch.float32):
        k = (torch.randn(4, 3, 8, 128, generator=gen) * 8).to(device, dtype)
        k.view(-1)[: len(edges)] = edges.to(device, dtype)
        caches = [torch.zeros(6, 5, 8, 128, dtype=FP8_DTYPE, device=device) for _ in range(2)]
        slots = torch.tensor([5, 0, 2, 3], device=device)
        positions = torch.tensor([[0, 1, 2], [2, 3, 4], [1, 2, 3], [0, 2, 4]], device=device)
        write_kv(*caches, slots, positions, k, k)
        stored = caches[0][slots[:, None], positions]
        out[f"write_kv_{dtype}"] = torch.equal(stored.view(torch.uint8), to_fp8(k).view(torch.uint8))
    heads, kv_heads, dim = 16, 8, 128
    qkv = (torch.randn(4, 1, (heads + 2 * kv_heads) * dim, generator=gen) * 4).to(device, torch.bfloat16)
    norm = (torch.ones(dim, device=device, dtype=torch.bfloat16), 1e-6)
    positions = torch.tensor([[3], [7], [0], [9]], device=device)
    cos, sin = (torch.randn(4, 1, 1, dim, generator=gen).to(device, torch.bfloat16) for _ in range(2))
    wide = [torch.zeros(6, 12, kv_heads, dim, dtype=torch.bfloat16, device=device) for _ in range(2)]
    narrow = [torch.zeros(6, 12, kv_heads, dim, dtype=FP8_DTYPE, device=device) for _ in range(2)]
    for caches in (wide, narrow):
        norm_rope_write_kv(qkv, heads, norm, norm, cos, sin, *caches, slots, positions)
    out["norm_rope_write"] = all(torch.equal(n.view(torch.uint8), to_fp8(w).view(torch.uint8))
                                 for n, w in zip(narrow, wide, strict=True))  # fmt: skip
    return out


def compare_projected_lookups(talker, flags: dict, config, steps: int, device: str) -> dict:
    """The mode's runner with the code predictor's inputs looked up in projected tables against it projecting each
    looked-up embedding (`compare_close`: not the same bits, the tables' sums run in another order)."""
    max_len = check_len(steps)
    runners = [TalkerRunner(talker, config, 64, max_len, device, **{**flags, "projected_lookups": on})
               for on in (True, False)]  # fmt: skip
    return compare_close(runners, steps)


def compare_bitwise(
    setups: list[tuple], config, steps: int, device: str, batches: tuple[int, ...] = (64,), slots: int = 64
) -> dict:
    """Two setups, each (talker, TalkerRunner kernel flags[, the mode's extras set on the runner: runner_paths]),
    stepped eagerly over the same prompts and slots (step i the first `batches[i % len(batches)]` of `slots`, at least
    one step at each): changes that only move or fuse work without reordering a sum must give the same codes, caches
    and hidden state, bit for bit."""
    steps = max(steps, len(batches))
    max_len = check_len(steps)
    runners = []
    for talker, flags, *extras in setups:
        runners.append(TalkerRunner(talker, config, slots, max_len, device, **flags))
        runner_paths(runners[-1], extras[0] if extras else set())
    for r in runners:
        prefill_all(r, seed=0)
    codes_equal = True
    for step in range(steps):
        batch = torch.arange(batches[step % len(batches)], device=device)
        codes_equal &= torch.equal(runners[0].decode_step(batch)[0], runners[1].decode_step(batch)[0])
    return {"codes_equal": codes_equal, **runner_states_equal(*runners), "steps": steps}


def runner_states_equal(a: TalkerRunner, b: TalkerRunner) -> dict:
    """Whether two runners' K/V caches, last hidden states and slot state (counters and histories) are equal."""
    state = ("pending", "drawn", "finished", "seen", "next_pos")
    return {
        "caches_equal": all(torch.equal(getattr(getattr(a, cache), kv), getattr(getattr(b, cache), kv))
                            for cache in ("cache", "predictor_cache") for kv in ("k", "v")),
        "hidden_equal": torch.equal(a.last_hidden, b.last_hidden),
        "state_equal": all(torch.equal(getattr(a, name), getattr(b, name)) for name in state),
    }  # fmt: skip


def compare_programmatic_launch(
    talker, flags: dict, config, steps: int, device: str, early_weights: bool, max_rows: int = 0
) -> dict:
    """The same prompts stepped through CUDA graphs captured with programmatic launch (and `early_weights`; in steps
    of at most `max_rows` rows), then through graphs captured without it (a runner each, one after the other, steps at
    1, 5, 16 and 64 rows in turn, at least one at each): the launch only lets a kernel's programs be scheduled before
    the kernel ahead of it ends, so codes, caches, hidden state and slot state must be equal to the bit. Leaves the
    switch as the mode has it."""
    batches = (1, 5, 16, 64)
    slots, steps = 64, max(steps, len(batches))
    max_len = check_len(steps)
    runners, codes = [], []
    for on in (True, False):
        set_programmatic_launch(on, early_weights=on and early_weights, max_rows=max_rows)
        runner = TalkerRunner(talker, config, slots, max_len, device, scratch_slot=True, **flags)
        prefill_all(runner, seed=0)
        graphs = TalkerGraphs(runner, batches)
        codes.append([graphs.decode_step(torch.arange(batches[i % 4], device=device))[0].clone() for i in range(steps)])
        runners.append(runner)
        del graphs
    set_programmatic_launch(True, early_weights=early_weights, max_rows=max_rows)
    codes_equal = all(torch.equal(x, y) for x, y in zip(*codes, strict=True))
    return {"codes_equal": codes_equal, **runner_states_equal(*runners), "steps": steps}


def check_attention_op(device: str, dtype: torch.dtype) -> dict:
    """Decode attention at the talker's shapes, each path against the fp32 definition: the kernel, and the masked
    SDPA the PyTorch path runs (default backend and the math backend)."""
    import torch.nn.functional as F
    from omni.kernels.decode_attention import decode_attention, decode_attention_reference
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gen = torch.Generator(device=device).manual_seed(0)
    rows, heads, kv_heads, dim, slots, length = 64, 16, 8, 128, 80, 2048
    q = torch.randn(rows, heads, dim, device=device, generator=gen)
    k = torch.randn(slots, length, kv_heads, dim, device=device, generator=gen)
    v = torch.randn(slots, length, kv_heads, dim, device=device, generator=gen)
    slot_ids = torch.randperm(slots, device=device, generator=gen)[:rows]
    lengths = torch.randint(1, 400, (rows,), device=device, generator=gen)
    want = decode_attention_reference(q, k, v, slot_ids, lengths).float()
    qd, kd, vd = q.to(dtype), k.to(dtype), v.to(dtype)
    mask = (torch.arange(length, device=device)[None, :] < lengths[:, None])[:, None, None, :]  # [B, 1, 1, L]

    def sdpa() -> torch.Tensor:
        out = F.scaled_dot_product_attention(
            qd[:, :, None], kd[slot_ids].transpose(1, 2), vd[slot_ids].transpose(1, 2), attn_mask=mask, enable_gqa=True
        )
        return out[:, :, 0].float()

    with sdpa_kernel(SDPBackend.MATH):
        math = sdpa()
    results = {
        "kernel": decode_attention(qd, kd, vd, slot_ids, lengths).float(),
        "sdpa_default": sdpa(),
        "sdpa_math": math,
        "reference_of_rounded_inputs": decode_attention_reference(
            qd.float(), kd.float(), vd.float(), slot_ids, lengths
        ),
    }
    return {name: round(float((got - want).abs().max()), 5) for name, got in results.items()}


def profile_step(runner: TalkerRunner, slots: torch.Tensor, top: int = 15) -> list[dict]:
    """Top CUDA kernels of one eager decode step (GPU time; the step's launch gaps are not in it)."""
    from torch.profiler import ProfilerActivity, profile

    runner.decode_step(slots)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        runner.decode_step(slots)
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    total = sum(e.self_device_time_total for e in events)
    events.sort(key=lambda e: e.self_device_time_total, reverse=True)
    rows = [{"kernel": e.key[:90], "calls": e.count, "ms": round(e.self_device_time_total / 1e3, 3),
             "share": round(e.self_device_time_total / total, 3)} for e in events[:top]]  # fmt: skip
    rows.insert(0, {"kernel": "TOTAL", "calls": sum(e.count for e in events), "ms": round(total / 1e3, 3), "share": 1})
    return rows


def exposed_parts(spans: list[tuple[str, float, float]]) -> list[float]:
    """Each launch's time not covered by the launches before it on one stream, in the order given: spans are (name,
    start, end). With programmatic launch a kernel starts before the one ahead of it ends and waits for it, so its own
    span counts that wait; its exposed part runs from the later of its start and the latest end before it (in start
    order) to its end. The parts sum to the union of the spans (the time the GPU was busy), so they say where a step's
    time goes where the spans' sum, overlapped, does not (run 177: 125-160% of the wall time)."""
    parts = [0.0] * len(spans)
    reach = -float("inf")
    for i in sorted(range(len(spans)), key=lambda i: spans[i][1]):
        _, start, end = spans[i]
        parts[i] = max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return parts


def exposed_time(spans: list[tuple[str, float, float]]) -> dict[str, float]:
    """Each kernel's exposed parts (`exposed_parts`) summed by name."""
    exposed: dict[str, float] = defaultdict(float)
    for (name, _, _), part in zip(spans, exposed_parts(spans), strict=True):
        exposed[name] += part
    return dict(exposed)


def span_totals(spans: list[tuple[str, float, float]]) -> dict[str, tuple[float, int]]:
    """Each kernel's summed span and its launch count, by name. Kernels whose names share the kept prefix are summed,
    not one put in the other's place (run 178: two index kernels of one 120-character prefix, where a dict of
    `key_averages` kept only the last, counted less than their exposed time)."""
    totals: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for name, start, end in spans:
        totals[name][0] += end - start
        totals[name][1] += 1
    return {name: (total, count) for name, (total, count) in totals.items()}


def gemm_calls(runner: TalkerRunner, slots: torch.Tensor) -> list[tuple[str, int]]:
    """The weight each GEMM of one eager decode step at `slots` multiplies by, named as `skinny_gemms` names it, and
    its rows of input, in launch order: what --profile-kernel's GEMM calls are (a graph replays its capture's launches
    in order). Both the skinny kernels' launches and F.linear's calls (cuBLAS, past the kernels' rows: one GEMM kernel
    a call). A pass of T positions a slot has T rows a slot (the code predictor's first pass: 2). Runs the step (the
    slots' state moves on by it); a weight of no known name is given by its shape."""
    from omni.kernels.skinny_linear import _skinny_linear_dot_kernel, _skinny_linear_kernel

    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    names = {weight.data_ptr(): name for name, (_, weight, _) in skinny_gemms(runner.talker).items()}
    gemms = (_skinny_linear_kernel, _skinny_linear_dot_kernel)
    launched: list[tuple[str, int]] = []
    originals = {cls: cls.run for cls in {type(kernel) for kernel in gemms}}

    def record(x: torch.Tensor, weight: torch.Tensor) -> None:
        launched.append((names.get(weight.data_ptr(), f"{list(weight.shape)}"), x.numel() // x.shape[-1]))

    def recording(original):
        def run(kernel, *args, **kwargs):
            if kernel in gemms:  # (x, weight, ...) in both kernels
                record(args[0], args[1])
            return original(kernel, *args, **kwargs)

        return run

    linear = F.linear

    def recorded_linear(x, weight, bias=None):
        record(x, weight)
        return linear(x, weight, bias)

    try:
        for cls, original in originals.items():
            cls.run = recording(original)
        F.linear = recorded_linear  # the module every caller looks F.linear up in at call time
        runner.decode_step(slots)
    finally:
        F.linear = linear
        for cls, original in originals.items():
            cls.run = original
    return launched


def gemm_table(talker: Qwen3TTSTalker, calls: list[tuple[str, int]], exposed_us: list[float]) -> list[dict]:
    """--profile-kernel's GEMM launches by weight (`gemm_calls`' names and rows, each layer's alike: `layers.*`), the
    most exposed time first: launches a step, weight shape, exposed µs a launch, the weight's bytes over that time
    (TB/s: which weights read slowly in a few-row step) and the calls' multiply-adds over it (TFLOP/s: which GEMMs are
    far from the tensor cores' peak in a many-row step). A weight of no known name (given by its shape) has neither."""
    gemms = skinny_gemms(talker)
    groups: dict[str, list] = {}  # name -> [shape, launches, us, bytes, flops]
    for (name, rows), us in zip(calls, exposed_us, strict=True):
        weight = gemms[name][1] if name in gemms else None
        shape = list(weight.shape) if weight is not None else name
        group = groups.setdefault(re.sub(r"\.\d+\.", ".*.", name), [shape, 0, 0.0, 0, 0])
        known = weight is not None
        group[1:] = (group[1] + 1, group[2] + us, group[3] + (weight.nbytes if known else 0),
                     group[4] + (2 * rows * weight.numel() if known else 0))  # fmt: skip
    table = []
    for name, (shape, launches, us, nbytes, flops) in groups.items():
        per_s = round(nbytes / us / 1e6, 2) if us and nbytes else None
        flop_s = round(flops / us / 1e6, 1) if us and flops else None
        table.append({"weight": name, "shape": shape, "launches": launches, "us": round(us, 1),
                      "us_a_launch": round(us / launches, 2), "tb_per_s": per_s, "tflop_per_s": flop_s})  # fmt: skip
    return sorted(table, key=lambda row: -row["us"])


def profile_replays(graphs: TalkerGraphs, slots: torch.Tensor, iters: int, kernel: str = "") -> dict:
    """Every CUDA kernel of `iters` graph replays, as microseconds per step, against the steps' wall time: at small
    batches the step is a chain of short kernels, so what a change costs there shows up kernel by kernel. `kernels`
    holds each kernel's own spans (overlapped under programmatic launch), `exposed` its time past the kernels before it
    (`exposed_time`; they sum to `busy_us`). With `kernel` (a regex), also that kernel's calls in step order, each the
    mean of its `iters` replays (which pass or layer a slow call is): their spans (`calls_us`) and exposed parts
    (`calls_exposed_us`)."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARMUP_STEPS):
        graphs.decode_step(slots)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(iters):
            graphs.decode_step(slots)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    gpu_events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    spans = [(e.name[:120], e.time_range.start, e.time_range.end) for e in gpu_events]
    kernels = {name: [total / iters, count / iters] for name, (total, count) in span_totals(spans).items()}
    spans_sum = sum(us for us, _ in kernels.values())
    launches = sum(n for _, n in kernels.values())
    gemm = sum(us for name, (us, _) in kernels.items() if name.startswith("nvjet") or "cublas" in name)
    exposed = {name: us / iters for name, us in exposed_time(spans).items()}
    calls, calls_exposed = [], []
    if kernel:
        parts = exposed_parts(spans)
        matched = sorted((start, end - start, parts[i]) for i, (_, start, end) in enumerate(spans)
                         if re.search(kernel, gpu_events[i].name))  # fmt: skip
        per_step = len(matched) // iters
        calls = [round(sum(m[1] for m in matched[i::per_step]) / iters, 2) for i in range(per_step)]
        calls_exposed = [round(sum(m[2] for m in matched[i::per_step]) / iters, 2) for i in range(per_step)]
    return {"wall_us": round(wall / iters * 1e6, 1), "kernel_us": round(spans_sum, 1), "gemm_us": round(gemm, 1),
            "busy_us": round(sum(exposed.values()), 1), "launches": launches, "calls_us": calls,
            "calls_exposed_us": calls_exposed,
            "kernels": {name: [round(us, 2), n] for name, (us, n) in sorted(kernels.items(), key=lambda kv: -kv[1][0])},
            "exposed": {name: round(us, 2) for name, us in sorted(exposed.items(), key=lambda kv: -kv[1])}}  # fmt: skip


def check_skinny_linear(talker: Qwen3TTSTalker, device: str) -> dict:
    """The GEMMs `use_skinny_linear` set, at 1 up to their `skinny_rows` rows of random input: the largest error
    against the fp32 product (relative to its largest value) through the kernel and through cuBLAS (F.linear), and
    how many outputs differ."""
    gemms = [(m, w, b) for m, w, b in skinny_gemms(talker).values() if "skinny_rows" in m.__dict__]
    gen = torch.Generator(device=device).manual_seed(5)
    worst = {"kernel": 0.0, "cublas": 0.0, "outputs_differing": 0, "outputs": 0, "gemms": len(gemms)}
    for module, weight, bias in gemms:
        for rows in range(1, module.skinny_rows + 1):
            x = torch.randn(rows, weight.shape[1], device=device, generator=gen).to(weight.dtype)
            exact = F.linear(x.float(), weight.float(), bias.float() if bias is not None else None)
            scale = exact.abs().max().item()
            ours = module_linear(module, x, weight, bias)  # as the step multiplies
            theirs = F.linear(x, weight, bias)
            worst["kernel"] = max(worst["kernel"], (ours.float() - exact).abs().max().item() / scale)
            worst["cublas"] = max(worst["cublas"], (theirs.float() - exact).abs().max().item() / scale)
            worst["outputs_differing"] += int((ours != theirs).sum())
            worst["outputs"] += ours.numel()
    return {k: round(v, 7) if isinstance(v, float) else v for k, v in worst.items()}


def check_correctness(talker, config, steps: int, device: str, **kernels) -> dict:
    """`kernels`: TalkerRunner's kernel flags (sampler_kernel, short_pass_kernel, kv_write_kernel,
    norm_rope_write_kernel, predictor_tables)."""
    slots, max_len = 64, check_len(steps)
    runners = [TalkerRunner(talker, config, slots, max_len, device, scratch_slot=True, **kernels) for _ in range(3)]
    for r in runners:
        prefill_all(r, seed=0)
    graphs = TalkerGraphs(runners[0], (1, 8, 16, 64))
    gen = torch.Generator().manual_seed(1)
    batches = [5, 64, 37, 1, 16, 12]
    exact_padded, equal_codes, total_codes = True, 0, 0
    for step in range(steps):
        n = batches[step % len(batches)]
        batch = torch.randperm(slots, generator=gen)[:n].sort().values.to(device)
        padded = torch.full((graphs.bucket_for(n),), runners[1].scratch_slot, device=device)
        padded[:n] = batch
        g_codes, g_fin = graphs.decode_step(batch)
        g_codes, g_fin = g_codes.clone(), g_fin.clone()
        p_codes, p_fin = runners[1].decode_step_padded(padded)
        e_codes, _ = runners[2].decode_step(batch)
        exact_padded &= torch.equal(g_codes, p_codes[:n]) and torch.equal(g_fin, p_fin[:n])
        equal_codes += int((g_codes == e_codes).sum())
        total_codes += g_codes.numel()
    same_state = all(
        torch.equal(getattr(runners[0], name)[:slots], getattr(runners[1], name)[:slots])
        for name in ("pending", "next_pos", "drawn", "seen", "last_hidden")
    )
    del runners, graphs
    return {"graph_equals_eager_padded": bool(exact_padded and same_state), "steps": steps,
            "codes_equal_to_unpadded_eager": f"{equal_codes}/{total_codes}"}  # fmt: skip


def random_draw_rows(vocab: int, n: int, device: str, dtype: torch.dtype, seed: int) -> dict:
    """`draw` arguments for n mixed rows: greedy and sampled, temperatures, top-k 0 / 1 / 50 / V, top-p 1 / 0.8 /
    0.1, suppressed (-inf) ids, coarse values with ties; logits in `dtype` (the talker's logits are bf16)."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, vocab, generator=gen) * 3
    logits[1::4] = (logits[1::4] * 2).round() / 2
    logits = logits.masked_fill(torch.rand(n, vocab, generator=gen) < 0.1, -torch.inf)
    i = torch.arange(n)
    rows = dict(
        logits=logits.to(dtype),
        do_sample=i % 5 != 0,
        temperature=torch.tensor([0.9, 0.5, 1.0, 1.7])[i % 4],
        top_k=torch.tensor([50, 0, 1, vocab, 50, 3])[i % 6],
        top_p=torch.tensor([1.0, 0.8, 0.1])[i % 3],
        seed=torch.randint(-(1 << 63), (1 << 63) - 1, (n,), generator=gen),
        counter=torch.randint(0, 1 << 20, (n,), generator=gen),
    )
    return {k: v.to(device) for k, v in rows.items()}


def check_sampler_kernel(device: str) -> dict:
    """The sampler kernel against `sampling.draw` on this GPU; raises on any difference the kernel's docs do not
    allow (kernels/sampling.py: only the top-p cut within fp32 rounding may differ)."""
    from omni.kernels import sampling as kernel

    from omni.talker import sampling

    bits = torch.arange(1 << sampling.UNIFORM_BITS, dtype=torch.int32, device=device)
    noise = kernel.gumbel(bits)
    torch_noise = -torch.log(-torch.log(sampling.unit_interval(bits.long())))
    out: dict = {"noise_bit_identical": torch.equal(noise, torch_noise),
                 "noise_values_differing": int((noise != torch_noise).sum())}  # fmt: skip
    rows = random_draw_rows(3072, 256, device, torch.float32, seed=0)
    torch_bits = sampling.hash_bits(rows["seed"], rows["counter"], 3072)
    out["hash_bits_identical"] = torch.equal(
        kernel.uniform_bits(rows["seed"], rows["counter"], 3072).long(), torch_bits
    )
    failures = [name for name in ("noise_bit_identical", "hash_bits_identical") if not out[name]]
    for vocab, dtype in ((2048, torch.bfloat16), (3072, torch.bfloat16), (3072, torch.float32), (37, torch.float32)):
        r = random_draw_rows(vocab, 2048, device, dtype, seed=vocab)
        got, want = kernel.draw(**r), sampling.draw(**r)
        warped = sampling.apply_top_k(sampling.apply_temperature(r["logits"], r["temperature"]), r["top_k"])
        noise = -torch.log(-torch.log(sampling.uniform(r["seed"], r["counter"], vocab)))
        boundary = kernel.top_p_boundary_rows(warped, noise, r["top_p"], r["do_sample"]).to(device)
        differ = got != want
        name = f"draw_V{vocab}_{str(dtype).removeprefix('torch.')}"
        out[name] = {"ids_equal": f"{int((~differ).sum())}/{len(got)}", "top_p_boundary_rows": int(boundary.sum()),
                     "differ_on_boundary_rows": int((differ & boundary).sum()),
                     "differ_elsewhere": int((differ & ~boundary).sum())}  # fmt: skip
        if out[name]["differ_elsewhere"]:
            failures.append(name)
    if failures:
        raise RuntimeError(f"the sampler kernel differs from sampling.draw beyond the top-p boundary: {failures} {out}")
    return out


def compare_sampler_runners(talker, config, steps: int, device: str) -> dict:
    """fp32 runners with and without the sampler kernel over the same prompts (greedy and sampled slots, top-p 1):
    the codes must be equal; raises otherwise."""
    slots, max_len = 64, check_len(steps)
    runners = [TalkerRunner(talker, config, slots, max_len, device, sampler_kernel=s) for s in (False, True)]
    for r in runners:
        prefill_all(r, seed=0)
    batch = torch.arange(slots, device=device)
    equal = total = 0
    for _ in range(steps):
        want, _ = runners[0].decode_step(batch)
        got, _ = runners[1].decode_step(batch)
        equal += int((got == want).sum())
        total += got.numel()
    same_state = all(torch.equal(getattr(runners[0], n), getattr(runners[1], n)) for n in ("pending", "seen", "drawn"))
    del runners
    out = {"codes_equal": f"{equal}/{total}", "same_state": same_state}
    if equal != total or not same_state:
        raise RuntimeError(f"runner codes differ with the sampler kernel (fp32, top-p 1): {out}")
    return out


SILU_DOWN_CHECK_ROWS = (1, 3, 16, 32, 64)  # the row kernel, both kernels, the dot kernel, to 32 rows, F.linear


def time_steps(step, slots: torch.Tensor, iters: int) -> float:
    for _ in range(WARMUP_STEPS):
        step(slots)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step(slots)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


MODE_EXTRAS = {"sampler", "sdpa-short", "kv-write", "add-norm", "norm-rope-write", "rope-per-forward", "fused-draws",
               "talker-draw-only", "indexed-draws-only", "skinny-linear", "skinny-dot", "by-shape", "dot-32",
               "codes-by-row", "embedding-lookup", "radix-top-k", "silu-down", "pdl", "early-weights",
               "projected-lookups", "lookup-kernels", "step-inputs", "step-writes", "step-rope-tables",
               "norm-rope-attention", "fp8-kv", "wide", "wide-gated"}  # fmt: skip
WIDE_CHECK_ROWS = (128,)  # a step the wide kernels take (use_wide_linear's from_rows)


# The extras whose check steps the mode's runner against the same build with one TalkerRunner flag set otherwise, bit
# for bit: (extra, flag, its value in the other build, the result's key after the mode's label, what is printed).
FLAG_CHECKS = (
    ("norm-rope-write", "norm_rope_write_kernel", False, "norm_rope_write_vs_three_kernels",
     "norm+rope+write kernel vs three kernels"),
    ("fused-draws", "fused_draws", False, "fused_draws_vs_separate", "fused draws vs processors and counters apart"),
    ("rope-per-forward", "predictor_tables", True, "predictor_inputs_per_pass_vs_tables",  # RoPE and lengths (run
     "predictor attention inputs per pass vs tables"),  # 136: RoPE only)
    ("lookup-kernels", "lookup_kernels", False, "lookup_kernels_vs_lookups_and_adds",
     "lookup kernels vs PyTorch lookups and adds"),
    ("step-inputs", "step_input_kernel", False, "step_input_kernel_vs_gathers", "step input kernel vs PyTorch gathers"),
    ("step-writes", "step_write_kernel", False, "step_write_kernel_vs_writes", "step write kernel vs PyTorch writes"),
    ("step-rope-tables", "step_rope_tables", False, "step_rope_tables_vs_forward_rope",
     "step rope tables vs the forward's RoPE"),
    ("norm-rope-attention", "norm_rope_attention_kernel", False, "norm_rope_attention_vs_two_kernels",
     "norm+rope+attention kernel vs two kernels"),
)  # fmt: skip
# TalkerRunner flags that need another on (the runner refuses them without it): a check that turns the other off
# turns these off with it.
FLAG_NEEDS = {"step_rope_tables": "step_input_kernel", "norm_rope_attention_kernel": "norm_rope_write_kernel"}


def flag_set_otherwise(flags: dict, flag: str, value: bool) -> dict:
    """A FLAG_CHECKS build: `flags` with `flag` set to `value`, and any flag that needs one now off turned off."""
    other = {**flags, flag: value}
    for needing, needed in FLAG_NEEDS.items():
        if not other.get(needed, False):
            other[needing] = False
    return other


# BNxBKsSkP: a dot-kernel launch of BN features x BK-wide chunks, S stages, P split-K shares, 4 warps (`dot_spec`).
# +pin-NxK-BNxBKsSkP: that launch pinned on the [N, K] weights (a launch A/B; sweep_gemm_launch.py found it).
DOT_SPEC = r"([1-9][0-9]*)x([1-9][0-9]*)s([1-9])k([1-9])"
PIN = re.compile(rf"pin-([1-9][0-9]*)x([1-9][0-9]*)-({DOT_SPEC})")  # N, K, the launch's spec


def dot_spec(spec: str) -> dict:
    """The dot launch a BNxBKsSkP spec names (e.g. 64x128s4k1)."""
    found = re.fullmatch(DOT_SPEC, spec)
    if found is None:
        raise ValueError(f"a dot launch is BNxBKsSkP (e.g. 64x128s4k1), got {spec!r}")
    block_n, block_k, stages, split_k = map(int, found.groups())
    return dot_launch(block_n, block_k, num_stages=stages, split_k=split_k)


def known_extra(token: str) -> bool:
    """An extra the bench takes: one of MODE_EXTRAS, pdl-to-N or silu-down-to-N (N rows, N >= 1), or a +pin-..."""
    return (
        token in MODE_EXTRAS
        or re.fullmatch(r"(pdl|silu-down)-to-[1-9][0-9]*", token) is not None
        or PIN.fullmatch(token) is not None
    )


def pinned_launches(tokens: set[str]) -> dict[tuple[int, int], dict]:
    """A mode's +pin-... extras: the dot kernel's launch by weight shape [N, K]."""
    pins = {}
    for token in tokens:
        if found := PIN.fullmatch(token):
            pins[(int(found[1]), int(found[2]))] = dot_spec(found[3])
    return pins


def rows_bound(tokens: set[str], extra: str) -> int:
    """N of a mode's +<extra>-to-N, 0 (every step) without it: +pdl-to-N, programmatic launch only in steps of at most
    N rows (the talker service's programmatic_launch_max_rows); +silu-down-to-N, the SiLU in the down projections
    only there (skinny_linear_silu_down_max_rows)."""
    return next((int(t.removeprefix(f"{extra}-to-")) for t in tokens if t.startswith(f"{extra}-to-")), 0)


def mode_extras(mode: str) -> set[str]:
    """A mode's extras: "fused+sampler+kv-write" -> {"sampler", "kv-write"}."""
    return set(mode.split("+")[1:])


def runner_flags(tokens: set[str]) -> dict:
    """TalkerRunner's kernel settings for a mode's extras."""
    return dict(sampler_kernel="sampler" in tokens, short_pass_kernel="sdpa-short" not in tokens,
                kv_write_kernel="kv-write" in tokens, norm_rope_write_kernel="norm-rope-write" in tokens,
                predictor_tables="rope-per-forward" not in tokens, fused_draws="fused-draws" in tokens,
                projected_lookups="projected-lookups" in tokens, lookup_kernels="lookup-kernels" in tokens,
                step_input_kernel="step-inputs" in tokens, step_write_kernel="step-writes" in tokens,
                step_rope_tables="step-rope-tables" in tokens,
                norm_rope_attention_kernel="norm-rope-attention" in tokens,
                kv_cache_dtype=FP8_DTYPE if "fp8-kv" in tokens else None)  # fmt: skip


def build_mode(talker: Qwen3TTSTalker, mode: str) -> None:
    """The talker's own build for a mode (RoPE kept or not; the fused layer kernels, with or without add+norm)."""
    tokens = mode_extras(mode)
    talker.keep_rope_frequencies("rope-per-forward" not in tokens)  # the same bits either way (CPU tests)
    talker.gather_lookups = "embedding-lookup" not in tokens  # the same rows either way
    set_programmatic_launch(  # the same bits either way
        "pdl" in tokens, early_weights="early-weights" in tokens, max_rows=rows_bound(tokens, "pdl")
    )
    if mode.startswith("fused"):
        fuse_talker_kernels(talker, add_norm="add-norm" in tokens)  # idempotent; add_norm toggles
        use_skinny_linear(talker, on="skinny-linear" in tokens, dot="skinny-dot" in tokens,
                          by_shape="by-shape" in tokens, dot_32="dot-32" in tokens)  # fmt: skip
        use_silu_down(talker, on="silu-down" in tokens, max_rows=rows_bound(tokens, "silu-down"))
        gated = wide_linear.WIDE_GATED_TILES if "wide-gated" in tokens else None
        use_wide_linear(talker, wide_linear.WIDE_TILES, gated, on=bool(tokens & {"wide", "wide-gated"}))
        pins = pinned_launches(tokens)  # use_skinny_linear unpinned every module
        for module, weight, _ in skinny_gemms(talker).values():
            if tuple(weight.shape) in pins:
                module.skinny_launch = pins[tuple(weight.shape)]


def split_fused_draws(runner: TalkerRunner, tokens: set[str]) -> None:
    """One half of fused_draws on the timed runner (a diagnostic: each half is one of the two bitwise-checked paths):
    +talker-draw-only keeps the predictor's draws on gathered parameters, +indexed-draws-only keeps the talker's
    processors and counters apart from its draw."""
    if "talker-draw-only" in tokens:
        runner.indexed_draws = False
    if "indexed-draws-only" in tokens:
        from omni.kernels.sampling import draw as kernel_draw

        runner.draw_talker = partial(draw_talker, draw_fn=kernel_draw)


def runner_paths(runner: TalkerRunner, tokens: set[str]) -> None:
    """The runner-level extras of a mode, on the timed runner and in compare_bitwise: +codes-by-row (a session 42
    A/B) keeps decode_step's codes row-major, as before (each codebook's lookup reads a strided column);
    +radix-top-k (with +sampler+fused-draws) has both draw kernels search top-k by radix select."""
    if "codes-by-row" in tokens:
        runner.codes_by_group = False
    if "radix-top-k" in tokens:
        from omni.kernels.sampling import draw as kernel_draw
        from omni.kernels.sampling import draw_talker as kernel_draw_talker

        if runner.draw_talker is not kernel_draw_talker:
            raise SystemExit("+radix-top-k needs +sampler+fused-draws (both draw kernels)")
        runner.draw = partial(kernel_draw, radix_top_k=True)
        runner.draw_talker = partial(kernel_draw_talker, radix_top_k=True)


def timed_runner(talker, config, mode: str, slots: int, max_len: int, device: str, prompt_len: int) -> TalkerRunner:
    """The runner a mode is timed on (its kernel flags, the fused_draws half it names), every slot prefilled."""
    tokens = mode_extras(mode)
    runner = TalkerRunner(talker, config, slots, max_len, device, scratch_slot=True, decode_kernel=mode != "sdpa",
                          **runner_flags(tokens))  # fmt: skip
    split_fused_draws(runner, tokens)
    runner_paths(runner, tokens)
    prefill_all(runner, seed=2, prompt_len=prompt_len)
    return runner


class FreshSlots:
    """Steps the runner's slots may still take: `reserve` prefills them all again first where a timing would step one
    past its max_new_tokens. A finished slot must not be stepped: its positions run past max_len and its K/V writes
    past its rows (runs 182 and 183 swept past it and stopped on "an illegal instruction"). Every slot starts again
    at the prompt length. Where the timings fit one prefill nothing changes; of the device scripts before session 51
    only session 40's A/Bs over seven row counts (50 replays each) did not: slot 0's last 20 steps, in the 512-row
    timing, went past its end."""

    def __init__(self, runner, prompt_len: int):
        self.runner, self.prompt_len = runner, prompt_len
        # prefill_all's max_new_tokens, less the id the prefill draws: a slot finishes on its last allowed step
        self.per_prefill = runner.max_len - prompt_len - 1
        self.left = self.per_prefill  # timed_runner prefilled them
        self.prefills = 0

    def reserve(self, steps: int) -> None:
        if steps > self.per_prefill:
            raise ValueError(f"{steps} steps are more than a prefill gives ({self.per_prefill})")
        if steps > self.left:
            prefill_all(self.runner, seed=2, prompt_len=self.prompt_len)
            self.left, self.prefills = self.per_prefill, self.prefills + 1
        self.left -= steps


def parse_modes(text: str) -> list[str]:
    """The --modes list, fused modes last (they rewire the talker in place); an unknown mode stops the run."""
    modes = sorted(text.split(","), key=lambda m: m.startswith("fused"))
    unknown = [m for m in modes if m.split("+")[0] not in ("sdpa", "kernel", "fused")
               or ("+" in m and not m.startswith("fused+")) or not all(map(known_extra, mode_extras(m)))]  # fmt: skip
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}")
    return modes


def check_wide_tables(modes: list[str]) -> None:
    """A +wide / +wide-gated mode needs tiles to run (kernels/wide_linear.py's tables, or --wide-tiles'): with none
    it would time the plain step under another name."""
    wide = [m for m in modes if mode_extras(m) & {"wide", "wide-gated"}]
    if wide and not (wide_linear.WIDE_TILES or wide_linear.WIDE_GATED_TILES):
        raise SystemExit(f"{wide[0]}: no wide_linear tiles (WIDE_TILES is empty): pass --wide-tiles FILE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="0.6B,1.7B")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--max-len", type=int, default=2048, help="positions per slot (the service's max_context)")
    ap.add_argument("--prompt-len", type=int, default=160, help="positions prefilled per slot before timing")
    modes_help = (
        "sdpa: masked PyTorch attention; kernel: decode-attention kernel; fused: + fused layer kernels; "
        "fused+sampler: + the fused sampler kernel (one kernel per draw); fused+sampler+sdpa-short: as fused+sampler "
        "with the code predictor's 2-position first pass through SDPA (before session 22; the kernel elsewhere); "
        "+kv-write (after fused): K/V written to the caches by one Triton copy per layer (kernels/kv_write.py); "
        "+add-norm (after fused): each residual add in one kernel with the RMSNorm after it; +norm-rope-write (after "
        "fused): each attention's q/k norms, RoPE and K/V write in one kernel (kv_write.norm_rope_write_kv); "
        "+rope-per-forward: RoPE's frequencies and the code predictor's tables made anew by every forward, as before "
        "session 35 (otherwise kept: Decoder.keep_rope_frequencies, TalkerRunner's predictor_tables); +fused-draws "
        "(with sampler): the talker's processors and the slots' counters in its draw kernel, every draw reading the "
        "sampling parameters at the slot (TalkerRunner's fused_draws); +talker-draw-only / +indexed-draws-only (with "
        "+fused-draws, timing only): one half of it, the talker's fused draw or the predictor's indexed draws; "
        "+skinny-linear (after fused): every GEMM of the step through kernels/skinny_linear.py up to "
        "max_rows_for its weight (the talker service's skinny_linear); +skinny-dot (with +skinny-linear): every GEMM "
        "up to 16 rows, through the dot kernel from dot_from_for its weight's rows (2, 3 or 5) (the talker service's "
        "skinny_linear_dot); +by-shape (with +skinny-linear): both kernels' launches by the weight's shape "
        "(row_launch_for at 1 row, dot_launch_for with split-K); +dot-32 (with +skinny-dot): up to dot_rows_for its "
        "weight's rows (32 on most); +codes-by-row: decode_step's codes row-major, as before session 42 (strided "
        "embedding lookups); +embedding-lookup: every embedding lookup through F.embedding, as before session 42 "
        "(Qwen3TTSTalker.gather_lookups off); +radix-top-k (with +sampler+fused-draws): the draw kernels' top-k "
        "search by radix select (draw's radix_top_k); +silu-down (with +skinny-linear): each MLP's SiLU(gate) * up "
        "formed in its down projection's kernel (use_silu_down; the talker service's skinny_linear_silu_down); "
        "+pdl: every Triton kernel of the step launched with programmatic dependent launch (the talker service's "
        "programmatic_launch); +early-weights (with +pdl): the GEMM kernels' first weight chunk loaded before their "
        "wait (programmatic_early_weights); +pdl-to-32 (with +pdl; any N): only the steps of at most N rows launch "
        "with it (each graph as captured; programmatic_launch_max_rows); +silu-down-to-1 (with +silu-down; any N): "
        "the SiLU in the down projections only in steps of at most N rows (skinny_linear_silu_down_max_rows); "
        "+pin-1024x2048-64x128s4k1 (with +skinny-dot; any shape and launch): the dot kernel's launch for the "
        "[1024, 2048] weights pinned to 64 features x 128-wide chunks, 4 stages, 1 split-K share (4 warps); "
        "+wide (after fused): the GEMMs with a WIDE_TILES entry through kernels/wide_linear.py from 128 rows "
        "(use_wide_linear); +wide-gated: also each MLP's gate_up with SiLU(gate) * up in its epilogue "
        "(WIDE_GATED_TILES); "
        "+projected-lookups: the code predictor's passes 2..15 look their input up in projected tables instead of "
        "projecting it (TalkerRunner's projected_lookups; the talker service's projected_lookups); +lookup-kernels: "
        "the frame's embedding sum by one kernel after the passes, and with +projected-lookups each pass's input "
        "gathered by one (kernels/frame_embedding.py; the talker service's lookup_kernels); +step-inputs: the "
        "step's gathers at its rows' slots before the first pass in one kernel (step_inputs; the talker service's "
        "step_input_kernel); +step-writes: the step's writes at its rows' slots after the draw and the scratch "
        "reset in one kernel (kernels/step_writes.py; the talker service's step_write_kernel); +step-rope-tables "
        "(with +step-inputs): the talker forward's RoPE rows and key counts read by the step input kernel from "
        "tables made once (the talker service's step_rope_tables); +norm-rope-attention (with +norm-rope-write): the "
        "backbone's one-position passes' norms, RoPE, K/V write and attention in one kernel (kernels/"
        "decode_attention.py's norm_rope_attention; the talker service's norm_rope_attention_kernel); +fp8-kv: the "
        "talker's K/V cache in fp8 (the talker service's kv_cache_dtype fp8; checked against the model dtype's cache "
        "by equal codes, and the write kernels' bits against omni/fp8.py's to_fp8)"
    )
    ap.add_argument("--modes", default="sdpa,kernel,fused", help=modes_help)
    ap.add_argument("--eager", action="store_true", help="also time the eager step (launch-bound: ~150 ms)")
    ap.add_argument("--profile", action="store_true", help="top CUDA kernels of an eager step at the largest batch")
    ap.add_argument("--profile-replays", default="", help="batches whose graph replays are profiled kernel by kernel")
    ap.add_argument("--profile-kernel", default="", help="regex: with --profile-replays, that kernel call by call")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--check-steps", type=int, default=12)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--sampler-only", action="store_true", help="only check the sampler kernel against sampling.draw")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_talker_step.json"))
    ap.add_argument("--wide-tiles", help="+wide's tiles by shape from this JSON (bench_wide_linear --tables-out)")
    args = ap.parse_args()
    if args.wide_tiles:  # the tables +wide and +wide-gated run, in place of kernels/wide_linear.py's
        with open(args.wide_tiles) as f:
            wide_linear.WIDE_TILES, wide_linear.WIDE_GATED_TILES = wide_linear.tables_from_json(json.load(f))
    check_wide_tables(parse_modes(args.modes))
    if not torch.cuda.is_available():
        raise SystemExit("bench_talker_step needs a CUDA GPU (the CPU tests cover the same code under the interpreter)")
    device, dtype = "cuda", getattr(torch, args.dtype)
    batches = [int(b) for b in args.batches.split(",")]
    modes = parse_modes(args.modes)
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": args.dtype,
               "max_len": args.max_len, "prompt_len": args.prompt_len, "iters": args.iters, "models": {}}  # fmt: skip
    if args.sampler_only or any("+sampler" in m for m in modes):
        results["sampler_kernel"] = check_sampler_kernel(device)
        print("sampler kernel vs sampling.draw:", results["sampler_kernel"], flush=True)
    if args.sampler_only:
        print(json.dumps(results, indent=1))
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        return
    for name in args.models.split(","):
        torch.manual_seed(0)
        talker, config = build_talker(name, dtype, device)
        if name == args.models.split(",")[0]:
            results["attention_op_max_abs_vs_fp32"] = check_attention_op(device, dtype)
            print("attention op, max abs vs the fp32 definition:", results["attention_op_max_abs_vs_fp32"], flush=True)
        out: dict = {"check": check_correctness(talker, config, args.check_steps, device)}
        print(name, "graph vs eager", out["check"], flush=True)
        for fused in (False, True):
            label = "fused_vs_sdpa" if fused else "kernel_vs_sdpa"
            out[label] = compare_paths(talker, config, args.check_steps, device, fused)
            print(name, label, out[label], flush=True)
            if args.dtype != "float32":  # again in fp32 (TF32 off): separates a kernel error from bf16 rounding
                out[label + "_fp32"] = compare_paths(copy.deepcopy(talker).float(), config, 3, device, fused)
                print(name, label, "fp32", out[label + "_fp32"], flush=True)
        if any("+sampler" in m for m in modes):
            out["sampler_runner_fp32"] = compare_sampler_runners(
                copy.deepcopy(talker).float(), config, args.check_steps, device
            )
            print(name, "runner with vs without the sampler kernel, fp32", out["sampler_runner_fp32"], flush=True)
        if args.dtype != "float32" and any("+projected-lookups" in m for m in modes):
            # In fp32 (TF32 off), on the PyTorch paths of an unfused copy (the fused weights would stay bf16): the
            # tables' other order of sums should leave every code as the projection gives it.
            fp32 = copy.deepcopy(talker).float()
            out["projected_lookups_fp32"] = compare_projected_lookups(fp32, {}, config, args.check_steps, device)
            print(name, "projected lookups vs the projection, fp32", out["projected_lookups_fp32"], flush=True)
            del fp32
        out["modes"] = {}
        for mode in modes:  # fused modes last: they rewire the talker in place
            tokens = mode_extras(mode)
            flags = runner_flags(tokens)
            label = mode.replace("+", "_").replace("-", "_")
            build_mode(talker, mode)
            if mode.startswith("fused"):
                out[f"check_{label}"] = check_correctness(talker, config, args.check_steps, device, **flags)
                print(name, mode, "graph vs eager", out[f"check_{label}"], flush=True)
            if "kv-write" in tokens:
                setups = [(talker, {"kv_write_kernel": True}), (talker, {})]
                key = f"{label}_kv_write_vs_index_put"
                out[key] = compare_bitwise(setups, config, args.check_steps, device)
                print(name, mode, "kv write kernel vs index put", out[key], flush=True)
            for extra, flag, value, suffix, what in FLAG_CHECKS:  # each against the build with one flag flipped
                if extra in tokens:
                    setups = [(talker, flags), (talker, flag_set_otherwise(flags, flag, value))]
                    key = f"{label}_{suffix}"
                    out[key] = compare_bitwise(setups, config, args.check_steps, device)
                    print(name, mode, what, out[key], flush=True)
            if "skinny-linear" in tokens:
                out["skinny_linear_vs_cublas"] = check_skinny_linear(talker, device)
                print(name, mode, "skinny linear vs cuBLAS", out["skinny_linear_vs_cublas"], flush=True)
            if "add-norm" in tokens:
                layered = copy.deepcopy(talker)
                fuse_talker_kernels(layered, add_norm=False)
                setups = [(talker, {}), (layered, {})]
                key = f"{label}_add_norm_vs_layer_by_layer"
                out[key] = compare_bitwise(setups, config, args.check_steps, device)
                print(name, mode, "fused add+norm vs layer by layer", out[key], flush=True)
                del layered
            if "silu-down" in tokens:
                apart = copy.deepcopy(talker)
                use_silu_down(apart, on=False)
                setups = [(talker, flags), (apart, flags)]
                key = f"{label}_silu_down_vs_silu_mul"  # at rows where the down projections run the kernels
                out[key] = compare_bitwise(setups, config, args.check_steps, device, batches=SILU_DOWN_CHECK_ROWS)
                print(name, mode, "SiLU in the down projection vs the silu_mul kernel", out[key], flush=True)
                del apart
            if tokens & {"wide", "wide-gated"}:  # not the same bits as cuBLAS: how far the codes and states part
                plain = copy.deepcopy(talker)
                use_wide_linear(plain, {}, on=False)
                setups = [(talker, flags), (plain, flags)]
                key = f"{label}_wide_vs_cublas"
                out[key] = compare_bitwise(setups, config, args.check_steps, device, WIDE_CHECK_ROWS, slots=128)
                print(name, mode, "wide kernels vs cuBLAS", out[key], flush=True)
                if "wide-gated" in tokens:  # the gated epilogue against the wide kernel + silu_mul: the same bits
                    # (the gate_up at its gated tiles, ungated: the same K loop)
                    use_wide_linear(plain, wide_linear.WIDE_TILES | wide_linear.WIDE_GATED_TILES)
                    key = f"{label}_wide_gated_vs_silu_mul"
                    out[key] = compare_bitwise(setups, config, args.check_steps, device, WIDE_CHECK_ROWS, slots=128)
                    print(name, mode, "gated wide kernel vs wide + silu_mul", out[key], flush=True)
                del plain
            if "pdl" in tokens:
                key = f"{label}_pdl_vs_serial_graphs"
                early = "early-weights" in tokens
                out[key] = compare_programmatic_launch(
                    talker, flags, config, args.check_steps, device, early, rows_bound(tokens, "pdl")
                )
                print(name, mode, "graphs with programmatic launch vs without", out[key], flush=True)
            if "projected-lookups" in tokens:
                key = f"{label}_projected_lookups_vs_projection"
                out[key] = compare_projected_lookups(talker, flags, config, args.check_steps, device)
                print(name, mode, "projected lookups vs the projection", out[key], flush=True)
            if "fp8-kv" in tokens:  # not the same bits: how close to the model dtype's cache, and the writes' bits
                out["fp8_writes_equal_to_fp8"] = check_fp8_writes(device)
                print(name, mode, "fp8 cache writes vs to_fp8", out["fp8_writes_equal_to_fp8"], flush=True)
                max_len = check_len(args.check_steps)
                runners = [TalkerRunner(talker, config, 64, max_len, device, **{**flags, "kv_cache_dtype": dtype})
                           for dtype in (FP8_DTYPE, None)]  # fmt: skip
                key = f"{label}_fp8_vs_model_dtype_cache"
                out[key] = compare_close(runners, args.check_steps)
                print(name, mode, "fp8 K/V cache vs the model dtype's", out[key], flush=True)
                del runners
            if tokens & {"codes-by-row", "radix-top-k"}:
                setups = [(talker, flags, tokens), (talker, flags)]
                key = f"{label}_runner_paths_vs_default"
                out[key] = compare_bitwise(setups, config, args.check_steps, device)
                print(name, mode, "codes by row / radix top-k vs the default paths", out[key], flush=True)
            runner = timed_runner(talker, config, mode, max(batches), args.max_len, device, args.prompt_len)
            start = time.perf_counter()
            graphs = TalkerGraphs(runner, batches)
            res: dict = {"capture_s": round(time.perf_counter() - start, 2),
                         "reserved_gib": round(torch.cuda.memory_reserved() / 2**30, 1), "steps": {}}  # fmt: skip
            fresh = FreshSlots(runner, args.prompt_len)
            for b in batches:
                slots = torch.arange(b, device=device)
                fresh.reserve(WARMUP_STEPS + args.iters)
                graph = time_steps(graphs.decode_step, slots, args.iters)
                row = {"graph_ms": round(graph, 3), "graph_frames_per_s": round(b / graph * 1e3)}
                if args.eager:
                    fresh.reserve(WARMUP_STEPS + args.iters)
                    row["eager_ms"] = round(time_steps(runner.decode_step, slots, args.iters), 3)
                res["steps"][b] = row
                print(name, mode, f"batch {b}: {row}", flush=True)
            for b in [int(b) for b in args.profile_replays.split(",") if b]:
                fresh.reserve(WARMUP_STEPS + args.iters + 1)  # the replays, and gemm_calls' eager step
                res.setdefault("replay_profile", {})[b] = p = profile_replays(
                    graphs, torch.arange(b, device=device), args.iters, args.profile_kernel
                )
                print(name, mode, f"replays at {b}: wall {p['wall_us']} us, kernels {p['kernel_us']} us "
                      f"(GEMMs {p['gemm_us']}), busy {p['busy_us']} us, {p['launches']:.0f} launches",
                      flush=True)  # fmt: skip
                top = ", ".join(f"{k[:40]} {us}" for k, us in list(p["exposed"].items())[:10])
                print(name, mode, f"exposed at {b}: {top}", flush=True)
                if p["calls_us"]:
                    print(name, mode, f"{args.profile_kernel} call by call at {b}: {p['calls_us']}", flush=True)
                    print(name, mode, f"{args.profile_kernel} exposed at {b}: {p['calls_exposed_us']}", flush=True)
                if p["calls_us"] and re.search(args.profile_kernel, GEMM_KERNEL_NAMES):
                    # the calls are GEMMs: name their weights (after the replays: the eager step moves the slots on)
                    calls = gemm_calls(runner, torch.arange(b, device=device))
                    p["gemm_weights"], p["gemm_rows"] = [n for n, _ in calls], [rows for _, rows in calls]
                    print(name, mode, f"GEMM weights launch by launch at {b}: {p['gemm_weights']}", flush=True)
                    if len(p["gemm_weights"]) != len(p["calls_exposed_us"]):  # not the graph's launches: no table
                        print(name, mode, f"{len(p['gemm_weights'])} GEMM weights for {len(p['calls_exposed_us'])} "
                              "calls: no table", flush=True)  # fmt: skip
                        continue
                    p["gemm_table"] = gemm_table(talker, calls, p["calls_exposed_us"])
                    for r in p["gemm_table"]:
                        print(f"  {b} rows: {r['weight']} {r['shape']} x{r['launches']}: {r['us_a_launch']} us a "
                              f"launch, {r['tb_per_s']} TB/s, {r['tflop_per_s']} TFLOP/s", flush=True)  # fmt: skip
            if args.profile:
                res["profile"] = profile_step(runner, torch.arange(max(batches), device=device))
                for r in res["profile"]:
                    print(f"  {r['ms']:9.3f} ms {r['share']:6.1%} {r['calls']:6d}  {r['kernel']}")
            repeat = sum(m.split(" ")[0] == mode for m in out["modes"])  # a mode named twice is captured twice
            out["modes"][mode if not repeat else f"{mode} ({repeat + 1})"] = res
            del runner, graphs
            torch.cuda.empty_cache()
        results["models"][name] = out
        del talker
        torch.cuda.empty_cache()
    print(json.dumps(results, indent=1))
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
