"""The fused sampler kernel (kernels/sampling.py) against `omni.talker.sampling.draw`, on CPU through the Triton
interpreter; tools/bench_talker_step.py runs the same comparisons on a GPU.

What is exact here: the hash bits, greedy rows, temperature, top-k, and every id given the same noise outside the
top-p boundary rows (`top_p_boundary_rows`: a token within fp32 rounding of the cut). The noise itself is numpy's log
under the interpreter, a few ulps from torch's CPU log, so ids equal `draw`'s wherever torch's own argmax does not
move with that noise (on a GPU both use CUDA's logf and the noise is bit-identical).
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU tensors

import pytest
import torch
import triton
import triton.language as tl
from omni.kernels import sampling as ks
from omni.kernels.sampling import draw as kernel_draw
from omni.kernels.sampling import draw_talker as kernel_draw_talker
from omni.kernels.sampling import gumbel, top_p_boundary_rows, uniform_bits

from omni.talker import sampling
from omni.talker.generate import SynthesisOptions, Synthesizer
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import SpeechRequest
from tests.kernel_runners import compile_for_sm90


def test_hash_bits_equal_torch():
    seed = torch.tensor([0, -1, (1 << 63) - 1, -(1 << 63), 12345, -987654321])
    counter = torch.tensor([0, 1, 16 * 2047 + 15, 7, (1 << 40) + 3, 31])
    for vocab in (37, 3072):
        assert torch.equal(uniform_bits(seed, counter, vocab).long(), sampling.hash_bits(seed, counter, vocab))


def test_gumbel_noise_of_every_uniform():
    """All 2^23 uniforms: finite, and within 4 units of 2^-23 (relative to max(1, |g|)) of torch's CPU noise; the
    difference is numpy's float32 log against torch's (each up to a few ulps off the correctly rounded log)."""
    bits = torch.arange(1 << sampling.UNIFORM_BITS, dtype=torch.int32)
    got = gumbel(bits)
    want = -torch.log(-torch.log(sampling.unit_interval(bits.long())))
    assert torch.isfinite(got).all()
    error = ((got - want).abs() / want.abs().clamp(min=1)).max()
    assert error <= 4 * 2.0**-23, float(error)


def rows(vocab: int, n: int, seed: int) -> dict:
    """Mixed rows: greedy and sampled, temperatures, top-k 0 / 1 / 50 / V / > V, top-p 1 / 0.8 / 0.1, suppressed
    (-inf) ids, and coarse values with many ties; a few rows in bf16 precision (the talker's logits dtype)."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, vocab, generator=gen) * 3
    logits[1::4] = (logits[1::4] * 2).round() / 2  # ties
    logits[2::4] = logits[2::4].bfloat16().float()
    suppressed = torch.rand(n, vocab, generator=gen) < 0.2
    suppressed[::3] = False
    logits = logits.masked_fill(suppressed, -torch.inf)
    return dict(
        logits=logits,
        do_sample=torch.arange(n) % 5 != 0,
        temperature=torch.tensor([0.9, 0.5, 1.0, 1.7])[torch.arange(n) % 4],
        top_k=torch.tensor([50, 0, 1, vocab, vocab + 5, 50, 3])[torch.arange(n) % 7],
        top_p=torch.tensor([1.0, 0.8, 0.1])[torch.arange(n) % 3],
        seed=torch.randint(-(1 << 63), (1 << 63) - 1, (n,), generator=gen),
        counter=torch.randint(0, 1 << 20, (n,), generator=gen),
    )


def draw_with_noise(r: dict, noise: torch.Tensor) -> torch.Tensor:
    """sampling.draw with the given Gumbel noise in place of torch's."""
    warped = sampling.warp(r["logits"], r["temperature"], r["top_k"], r["top_p"])
    return torch.where(r["do_sample"], (warped + noise).argmax(dim=-1), r["logits"].argmax(dim=-1))


@pytest.mark.parametrize("vocab,n", [(2048, 40), (3072, 40), (37, 60)])
def test_draw_equals_sampling_draw(vocab, n):
    r = rows(vocab, n, seed=vocab)
    got = kernel_draw(**r)
    assert got.dtype == torch.int64 and ((got >= 0) & (got < vocab)).all()
    noise = gumbel(uniform_bits(r["seed"], r["counter"], vocab))  # the kernel's own noise
    warped = sampling.apply_top_k(sampling.apply_temperature(r["logits"], r["temperature"]), r["top_k"])
    boundary = top_p_boundary_rows(warped, noise, r["top_p"], r["do_sample"])
    checked = ~boundary
    assert checked[r["do_sample"] & (r["top_p"] < 1)].sum() >= n // 4  # the top-p rows are not all excluded
    # Given the kernel's noise, every id outside the top-p boundary rows is torch's.
    assert torch.equal(got[checked], draw_with_noise(r, noise)[checked])
    # With torch's own noise: the same ids wherever the few-ulp noise difference does not move torch's argmax.
    want = sampling.draw(**r)
    steady = checked & (draw_with_noise(r, noise) == want)
    assert torch.equal(got[steady], want[steady])
    greedy = ~r["do_sample"]
    assert torch.equal(got[greedy], r["logits"][greedy].argmax(dim=-1))


def test_bf16_logits_are_upcast_exactly():
    """The predictor's logits are bf16 when serving: the kernel reads them as they are (sample_subtalker casts
    them to fp32 for the PyTorch draw, and the kernel's upcast is the same exact conversion)."""
    r = rows(37, 24, seed=5)
    r["logits"] = r["logits"].bfloat16()
    noise = gumbel(uniform_bits(r["seed"], r["counter"], 37))
    got = kernel_draw(**r)
    r["logits"] = r["logits"].float()
    warped = sampling.apply_top_k(sampling.apply_temperature(r["logits"], r["temperature"]), r["top_k"])
    checked = ~top_p_boundary_rows(warped, noise, r["top_p"], r["do_sample"])
    assert torch.equal(got[checked], draw_with_noise(r, noise)[checked])


@pytest.mark.parametrize("draw_fn", [kernel_draw, sampling.draw], ids=["kernel", "torch"])
def test_counter_offset_and_out_are_a_later_counter_written_in_place(draw_fn):
    """The code predictor's draws: counter + counter_offset is the noise's counter (the kernel adds it itself), and
    `out`, a strided column of the frame's codes, receives the ids and is returned; the other columns are untouched."""
    r = rows(2048, 24, seed=11)
    offset = 7
    want = draw_fn(**{**r, "counter": r["counter"] + offset})
    assert not torch.equal(want, draw_fn(**r))  # the offset moves the sampled rows' noise
    codes = torch.full((24, 16), -1, dtype=torch.int64)
    got = draw_fn(**r, counter_offset=offset, out=codes[:, 3])
    assert got.data_ptr() == codes[:, 3].data_ptr()
    assert torch.equal(codes[:, 3], want)
    assert (codes[:, :3] == -1).all() and (codes[:, 4:] == -1).all()


@pytest.mark.parametrize("draw_fn", [kernel_draw, sampling.draw], ids=["kernel", "torch"])
def test_indexed_parameters_are_the_gathered_ones(draw_fn):
    """With `index`, a draw reads the five sampling parameters of row b at index[b] of per-slot tables: the same ids
    as the parameters gathered first (slots permuted and repeated)."""
    r = rows(2048, 24, seed=13)
    index = torch.randperm(24, generator=torch.Generator().manual_seed(1))
    index[5] = index[9]
    names = ("do_sample", "temperature", "top_k", "top_p", "seed")
    tables = {name: torch.empty_like(r[name]).index_copy_(0, index, r[name]) for name in names}
    tables["seed"][index[5]] = r["seed"][9]  # the repeated slot holds row 9's parameters
    want = draw_fn(**{**r, "seed": tables["seed"][index]})
    got = draw_fn(**{**r, **tables}, index=index)
    assert torch.equal(got, want)
    assert not torch.equal(draw_fn(**{**r, **tables}, index=index.flip(0)), want)  # the index is what is read


def talker_state(vocab: int, slots: int, seed: int) -> dict:
    """Per-slot talker state with every processor at work: histories (`seen`) over positive and negative logits,
    penalties, min_new_tokens above and below the drawn counts (EOS blocked or not), max_new_tokens reached or not."""
    gen = torch.Generator().manual_seed(seed)
    params = sampling.SlotSampling(slots)
    options = [
        sampling.SamplingParams(
            seed=int(torch.randint(0, 1 << 62, (), generator=gen)),
            do_sample=s % 3 != 0,
            top_k=[50, 0, 3][s % 3],
            top_p=[1.0, 0.8][s % 2],
            temperature=[0.9, 1.4][s % 2],
            repetition_penalty=[1.05, 1.5, 0.7][s % 3],
            min_new_tokens=[2, 6][s % 2],
            max_new_tokens=[5, 40][s % 2],
        )
        for s in range(slots)
    ]
    params.set_many(torch.arange(slots), options)
    seen = torch.rand(slots, vocab, generator=gen) < 0.3
    suppressed = torch.zeros(vocab, dtype=torch.bool)
    suppressed[vocab - 8 :] = True
    return dict(seen=seen, params=params, suppressed=suppressed)


def test_talker_draw_kernel_equals_the_torch_processors_and_counters():
    """kernels/sampling.py's draw_talker (processors, draw and the slots' counters in one kernel) against
    omni.talker.sampling.draw_talker with the kernel's own draw (so the noise and top-p are the same code): the same
    ids, finished rows, and pending / drawn / finished tables; EOS is the largest logit in every row, so whether it is
    blocked, penalized or drawn is what the rows test."""
    vocab, slots, eos_id = 64, 12, 5
    state = talker_state(vocab, slots, seed=3)
    gen = torch.Generator().manual_seed(4)
    rows_slots = torch.tensor([7, 2, 11, 0, 4, 9, 1, 3, 3])  # slot 3 twice: each row gets its own finished
    b = rows_slots.shape[0]
    logits = (torch.randn(b, vocab, generator=gen) * 2).bfloat16()
    logits[:, eos_id] = logits.float().max(dim=1).values + torch.tensor([0.5, -0.02, 3, 0.5, 0.1, 3, 0.5, 2, 2])
    logits[0, vocab - 1] = 30  # a suppressed id above everything
    generated = torch.tensor([1, 7, 3, 39, 4, 10, 6, 2, 2])
    results = []
    for draw_fn in (kernel_draw_talker, lambda *a: sampling.draw_talker(*a, draw_fn=kernel_draw)):
        counters = dict(
            pending=torch.full((slots,), -1, dtype=torch.int64),
            drawn=torch.full((slots,), -1, dtype=torch.int64),
            finished=torch.zeros(slots, dtype=torch.bool),
        )
        ids, finished = draw_fn(logits, rows_slots, generated, state["seen"], state["params"], state["suppressed"],
                                eos_id, *counters.values())  # fmt: skip
        results.append((ids, finished, counters))
    (got, got_finished, got_counters), (want, want_finished, want_counters) = results
    assert torch.equal(got, want) and torch.equal(got_finished, want_finished)
    for name in want_counters:
        assert torch.equal(got_counters[name], want_counters[name]), name
    assert (got == eos_id).any() and (got != eos_id).any()  # EOS drawn in some rows and blocked or beaten in others
    assert got_finished.any() and not got_finished.all()
    assert (got < vocab - 8).all()  # never a suppressed id
    assert torch.equal(got_counters["drawn"][rows_slots], generated + 1)


def test_kernel_draw_refuses_an_out_of_the_wrong_shape():
    r = rows(37, 4, seed=1)
    with pytest.raises(ValueError, match="out must be a \\[4\\] int64"):
        kernel_draw(**r, out=torch.empty(5, dtype=torch.int64))


@pytest.mark.parametrize(
    "top_p,kept",
    [(0.795, {4, 5, 7}), (0.805, {2, 4, 5, 7}), (0.55, {4})],
)
def test_top_p_cut_inside_a_tie_group_follows_a_stable_sort(top_p, kept):
    """Four tokens tied at p = 0.1 (columns 7, 2, 5, 0) below one of p = 0.6: their ascending cumulative
    probabilities are 0.1, 0.2, 0.3, 0.4 in column order (a stable sort's), so a cut of 1 - top_p = 0.205 removes
    columns 0 and 2, 0.195 only column 0, and 0.45 all four; the rest of the row is suppressed."""
    n, vocab = 48, 9
    row = torch.full((vocab,), -torch.inf)
    row[[7, 2, 5, 0]] = torch.tensor(0.1).log()
    row[4] = torch.tensor(0.6).log()
    ids = kernel_draw(
        row.expand(n, vocab).contiguous(),
        torch.ones(n, dtype=torch.bool),
        torch.ones(n),
        torch.zeros(n, dtype=torch.int64),
        torch.full((n,), top_p),
        torch.full((n,), 5, dtype=torch.int64),
        torch.arange(n),
    )
    assert set(ids.tolist()) == kept


def test_top_p_keeps_the_maximum_and_top_k_keeps_ties():
    n = 16
    row = torch.tensor([1.0, 3.0, 2.0, 3.0, 3.0, -torch.inf, 0.5])
    args = dict(
        do_sample=torch.ones(n, dtype=torch.bool),
        temperature=torch.full((n,), 0.7),
        seed=torch.full((n,), -3, dtype=torch.int64),
        counter=torch.arange(n),
    )
    logits = row.expand(n, -1).contiguous()
    # top_p tiny: only the last of the tied maxima in (value, column) order stays.
    tiny_p = kernel_draw(logits, top_k=torch.zeros(n, dtype=torch.int64), top_p=torch.full((n,), 1e-6), **args)
    assert set(tiny_p.tolist()) == {4}
    # 1 - 1e-8 rounds to 1 in fp32: every cumulative probability is <= the cut, only the exemption keeps the maximum.
    lone = torch.tensor([0.0, 50.0, -torch.inf, -1.0]).expand(n, -1).contiguous()
    kw = dict(top_k=torch.zeros(n, dtype=torch.int64), top_p=torch.full((n,), 1e-8), **args)
    assert set(kernel_draw(lone, **kw).tolist()) == {1} and set(sampling.draw(lone, **kw).tolist()) == {1}
    # top_k = 1 with three tied maxima keeps all three (the k-th largest value, ties kept).
    top1 = kernel_draw(logits, top_k=torch.ones(n, dtype=torch.int64), top_p=torch.ones(n), **args)
    assert set(top1.tolist()) == {1, 3, 4}
    assert torch.equal(top1, sampling.draw(logits, top_k=torch.ones(n, dtype=torch.int64), top_p=torch.ones(n), **args))


@triton.jit
def _kth_key_kernel(x_ptr, n, k_ptr, out_ptr, BLOCK: tl.constexpr, RADIX: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < n
    key = ks._order_key(tl.load(x_ptr + row * n + cols, mask=in_row, other=0.0))
    if RADIX:
        kth = ks._kth_largest_key_radix(key, in_row, tl.load(k_ptr + row))
    else:
        kth = ks._kth_largest_key(key, in_row, tl.load(k_ptr + row))
    tl.store(out_ptr + row, kth)


def order_keys(x: torch.Tensor) -> torch.Tensor:
    """The kernel's int32 keys computed by torch: ordered as the floats, -0.0 as +0.0."""
    bits = torch.where(x == 0, torch.zeros_like(x), x).view(torch.int32)
    return torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


@pytest.mark.parametrize("radix", [False, True], ids=["bisection", "radix"])
def test_top_k_search_finds_the_kth_largest_key_over_the_whole_range(radix):
    """The top-k search (`_kth_largest_key`, or `_kth_largest_key_radix`): the k-th largest key, ties counted, on rows
    whose keys span the whole int32 range (-inf and +inf: every one of the 32 halvings needed, every byte), ties, one
    distinct value, huge and tiny magnitudes, +-0, keys sharing their top bytes, for k = 1, 2, half, n - 1 and n."""
    n = 37
    g = torch.Generator().manual_seed(1)
    big = torch.finfo(torch.float32).max
    tiny = torch.finfo(torch.float32).tiny
    specials = torch.tensor([torch.inf, -torch.inf, big, -big, tiny, -tiny, 0.0, -0.0, 1e-45, -1e-45])
    rows = [
        torch.randn(n, generator=g),
        torch.cat([specials, torch.randn(n - len(specials), generator=g) * 1e30]),
        torch.full((n,), 2.5),
        torch.tensor([-torch.inf, torch.inf]).repeat(n)[:n],
        torch.randint(-3, 3, (n,), generator=g).float(),
        torch.cat([torch.full((n - 1,), -torch.inf), torch.tensor([-big])]),
        1.0 + torch.arange(n) * 2.0**-20,  # one exponent, the same top bytes: the low bytes decide
    ]
    ks_ = (1, 2, n // 2, n - 1, n)
    x = torch.stack([r[torch.randperm(n, generator=g)] for r in rows for _ in ks_]).contiguous()
    k = torch.tensor([k for _ in rows for k in ks_], dtype=torch.int64)
    out = torch.empty(len(x), dtype=torch.int32)
    _kth_key_kernel[(len(x),)](x, n, k, out, BLOCK=64, RADIX=radix)
    want = order_keys(x).sort(dim=1, descending=True).values.gather(1, (k - 1)[:, None])[:, 0]
    assert torch.equal(out, want)


def test_bad_input_is_refused():
    b, v = 2, 16
    ok = dict(
        logits=torch.zeros(b, v),
        do_sample=torch.ones(b, dtype=torch.bool),
        temperature=torch.ones(b),
        top_k=torch.zeros(b, dtype=torch.int64),
        top_p=torch.ones(b),
        seed=torch.zeros(b, dtype=torch.int64),
        counter=torch.zeros(b, dtype=torch.int64),
    )
    for change, message in [
        (dict(logits=torch.zeros(b, 4097)), "1 <= V <= 4096"),
        (dict(logits=torch.zeros(b, v, 2)), "logits must be"),
        (dict(logits=torch.zeros(v, b).t()), "contiguous last dim"),
        (dict(top_k=torch.zeros(b, dtype=torch.int32)), "top_k must be"),
        (dict(temperature=torch.ones(b + 1)), "temperature must be"),
        (dict(do_sample=torch.ones(b)), "do_sample must be"),
    ]:
        with pytest.raises(ValueError, match=message):
            kernel_draw(**{**ok, **change})


def test_runner_with_sampler_kernel_gives_the_same_codes(tiny_model_dir):
    """A few decode steps of a tiny talker (talker and predictor draws through the kernel; then with fused_draws, the
    talker's processors and counters in its draw's kernel and the parameters read at the slot), mixed sampling
    settings, through the capturable padded step: the same codes and slot state as the PyTorch sampler."""
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    runners = [
        TalkerRunner(synth.model.talker, synth.model.config, 3, 40, scratch_slot=True, sampler_kernel=kernel,
                     fused_draws=fused)
        for kernel, fused in ((False, False), (True, False), (True, True))
    ]  # fmt: skip
    assert runners[2].indexed_draws and not runners[1].indexed_draws
    options = [
        SynthesisOptions(seed=11, max_new_tokens=8),
        SynthesisOptions(greedy=True, max_new_tokens=8),
        SynthesisOptions(seed=12, max_new_tokens=8, top_p=0.8, top_k=0, temperature=1.3),
    ]
    text = ["One.", "Two words.", "And three."]
    for r in runners:
        for slot, (t, o) in enumerate(zip(text, options, strict=True)):
            request = SpeechRequest(text=t, speaker="Ryan", language="English")
            r.prefill(slot, synth.builder.build(request), synth.sampling_params(o))
    slots = torch.tensor([2, 0, 1, runners[0].scratch_slot])
    for step in range(3):
        want, want_finished = runners[0].decode_step_padded(slots)
        for r in runners[1:]:
            got, got_finished = r.decode_step_padded(slots)
            assert torch.equal(got[:3], want[:3]) and torch.equal(got_finished[:3], want_finished[:3]), f"step {step}"
    for r in runners[1:]:
        for name in ("pending", "seen", "drawn", "finished", "next_pos"):
            assert torch.equal(getattr(runners[0], name), getattr(r, name)), name


COMPILE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from omni.kernels import sampling as ks

rows = {"do_sample_ptr": "*i1", "temperature_ptr": "*fp32", "top_k_ptr": "*i64", "top_p_ptr": "*fp32",
        "seed_ptr": "*i64", "counter_ptr": "*i64"}
draw_signature = {"logits_ptr": "*bf16", "logits_stride": "i32", "vocab": "i32", "index_ptr": "*i64", **rows,
                  "counter_offset": "i32", "out_ptr": "*i64", "out_stride": "i32", "INDEXED": "constexpr",
                  "BLOCK": "constexpr", "LIBDEVICE": "constexpr", "RADIX": "constexpr", "PDL": "constexpr"}
sampling = {k: v for k, v in rows.items() if k != "counter_ptr"}
talker_signature = {"logits_ptr": "*bf16", "logits_stride": "i32", "vocab": "i32", "slots_ptr": "*i64",
                    "generated_ptr": "*i64", "seen_ptr": "*i1", "seen_stride": "i32", "penalty_ptr": "*fp32",
                    "min_new_ptr": "*i64", "max_new_ptr": "*i64", "suppressed_ptr": "*i1", "eos_id": "i32", **sampling,
                    "ids_ptr": "*i64", "pending_ptr": "*i64", "drawn_ptr": "*i64", "finished_ptr": "*i1",
                    "finished_rows_ptr": "*i1", "DRAWS_PER_FRAME": "constexpr", "BLOCK": "constexpr",
                    "LIBDEVICE": "constexpr", "RADIX": "constexpr", "PDL": "constexpr"}
kernels = [
    (ks._draw_kernel, draw_signature, {"INDEXED": False, "BLOCK": 64, "LIBDEVICE": True, "RADIX": False,
                                       "PDL": False}),
    (ks._draw_kernel, draw_signature, {"INDEXED": True, "BLOCK": 64, "LIBDEVICE": True, "RADIX": False,
                                       "PDL": True}),
    (ks._draw_kernel, draw_signature, {"INDEXED": False, "BLOCK": 64, "LIBDEVICE": True, "RADIX": True,
                                       "PDL": False}),
    (ks._draw_talker_kernel, talker_signature, {"DRAWS_PER_FRAME": 16, "BLOCK": 64, "LIBDEVICE": True,
                                                "RADIX": False, "PDL": True}),
    (ks._noise_kernel, {"seed_ptr": "*i64", "counter_ptr": "*i64", "bits_ptr": "*i32", "vocab": "i32",
                        "BLOCK": "constexpr"}, {"BLOCK": 64}),
    (ks._gumbel_kernel, {"bits_ptr": "*i32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
                         "LIBDEVICE": "constexpr"}, {"BLOCK": 64, "LIBDEVICE": True}),
]
for fn, signature, constexprs in kernels:
    pdl = constexprs.get("PDL", False)
    options = {"launch_pdl": pdl}
    ptx = compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32), options=options).asm["ptx"]
    assert ("griddepcontrol.wait" in ptx) == pdl
    if fn is not ks._noise_kernel and fn is not ks._gumbel_kernel:
        assert "div.rn.f32" in ptx and "div.full.f32" not in ptx, "temperature and softmax need IEEE division"
print("compiled")
"""


def test_kernels_compile_for_sm90(tmp_path):
    """The interpreter skips the compiler's checks (globals must be constexpr instances, branch types must agree, ...):
    compile each kernel of the module for sm_90 (H100/H200) to PTX with the Triton wheel's own toolchain, in a process
    without TRITON_INTERPRET (no GPU needed). A small BLOCK keeps it to seconds; the code is the same for every size."""
    done = compile_for_sm90(COMPILE, tmp_path)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def test_radix_top_k_draws_the_same_ids():
    """`radix_top_k` (the top-k search by radix select) is a speed choice: the same ids as the bisection on the mixed
    rows (top-k 1, 3, 50, V and more, ties, suppressed ids)."""
    for vocab, seed in ((2048, 41), (37, 42)):
        r = rows(vocab, 40, seed=seed)
        assert torch.equal(kernel_draw(**r, radix_top_k=True), kernel_draw(**r))


def test_num_warps_is_a_launch_choice_and_a_bad_one_is_refused():
    """`draw`'s num_warps changes the launch, not the ids (under the interpreter the launch is not simulated, so this
    checks the plumbing; tools/bench_draw.py compares the ids on a GPU); a count Triton cannot launch is refused."""
    r = rows(2048, 8, seed=31)
    assert torch.equal(kernel_draw(**r, num_warps=1), kernel_draw(**r))
    with pytest.raises(ValueError, match="num_warps must be"):
        kernel_draw(**r, num_warps=3)
