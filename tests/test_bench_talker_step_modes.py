"""tools/bench_talker_step.py's --modes: every extra its help names is accepted, an unknown one stops the run before
any GPU work (session 38's first device call lost a machine start to `+fused-draws` missing from the accepted set)."""

import os
import re
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the draw kernels run on CPU tensors

import pytest
import torch

from omni.talker.generate import Synthesizer
from omni.talker.model_runner import TalkerRunner
from tests.kernel_runners import PREFILLED_SLOTS, prefill_two_requests
from tests.tool_modules import load_tool

ROOT = Path(__file__).resolve().parent.parent


def load_bench():
    return load_tool("bench_talker_step")


def test_every_extra_named_in_the_help_parses():
    bench = load_bench()
    source = (ROOT / "tools" / "bench_talker_step.py").read_text()
    named = set(re.findall(r"\+([a-z][a-z0-9-]*[a-z0-9])", source.split("modes_help = (")[1].split("\n    )")[0]))
    assert {"kv-write", "fused-draws", "rope-per-forward", "dot-32"} <= named  # the help's extras were found
    assert all(map(bench.known_extra, named)) and "pdl-to-32" in named
    every = "fused+" + "+".join(sorted(bench.MODE_EXTRAS))
    assert bench.parse_modes(f"{every},sdpa,kernel") == ["sdpa", "kernel", every]  # fused modes last, order kept


@pytest.mark.parametrize(
    "modes", ["fused+fused-draw", "kernel+sampler", "fast", "sdpa,fused+sampler+nope", "fused+pdl+pdl-to-0"]
)
def test_an_unknown_mode_stops_the_run(modes):
    with pytest.raises(SystemExit, match="unknown modes"):
        load_bench().parse_modes(modes)


def test_each_half_of_fused_draws_is_its_own_path_with_the_same_codes(tiny_model_dir):
    """+talker-draw-only and +indexed-draws-only (timing diagnostics) each keep one half of fused_draws on the timed
    runner; both give the codes and slot state of the full setting."""
    bench = load_bench()
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    halves = {"fused-draws": (True, True), "talker-draw-only": (True, False), "indexed-draws-only": (False, True)}
    runners = {}
    for token, (fused_talker, indexed) in halves.items():
        runner = TalkerRunner(synth.model.talker, synth.model.config, 3, 64, scratch_slot=True, sampler_kernel=True,
                              fused_draws=True)  # fmt: skip
        bench.split_fused_draws(runner, {"fused-draws", token})
        assert runner.indexed_draws == indexed, token
        assert (getattr(runner.draw_talker, "func", None) is None) == fused_talker, token  # the off path is a partial
        prefill_two_requests(runner, synth)
        runners[token] = runner
    slots = torch.tensor(PREFILLED_SLOTS)
    for _ in range(2):
        want = runners["fused-draws"].decode_step_padded(slots)
        for token in ("talker-draw-only", "indexed-draws-only"):
            got = runners[token].decode_step_padded(slots)
            assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True)), token
    for name in ("pending", "seen", "drawn", "finished"):
        assert all(torch.equal(getattr(r, name), getattr(runners["fused-draws"], name)) for r in runners.values())


@pytest.mark.parametrize("token", ["codes-by-row", "radix-top-k"])
def test_runner_paths_give_the_same_codes(tiny_model_dir, token):
    """+codes-by-row (session 42's A/B: the group-major codes undone) and +radix-top-k (the draw kernels' top-k by
    radix select) on the timed runner: the codes, as [B, 16] rows, and the slot state are those of the default
    paths (the tiny model samples with top-k 50 of 2,048 and 3,072 ids: the search runs)."""
    bench = load_bench()
    synth = Synthesizer(tiny_model_dir("custom_voice"))
    runners = []
    for tokens in (set(), {token}):
        runner = TalkerRunner(synth.model.talker, synth.model.config, 3, 64, scratch_slot=True, sampler_kernel=True,
                              fused_draws=True)  # fmt: skip
        bench.runner_paths(runner, tokens)
        prefill_two_requests(runner, synth)
        runners.append(runner)
    now, other = runners
    assert now.codes_by_group and other.codes_by_group == (token != "codes-by-row")
    assert (getattr(other.draw, "keywords", {}) == {"radix_top_k": True}) == (token == "radix-top-k")
    slots = torch.tensor(PREFILLED_SLOTS)
    for _ in range(3):
        (got, got_finished), (want, want_finished) = now.decode_step(slots), other.decode_step(slots)
        assert got.shape == want.shape == (len(PREFILLED_SLOTS), 16)
        assert torch.equal(got, want) and torch.equal(got_finished, want_finished)
    assert want.is_contiguous() == (token == "codes-by-row") and not got.is_contiguous()  # a view of [16, B] now
    for name in ("pending", "seen", "drawn", "finished"):
        assert torch.equal(getattr(now, name), getattr(other, name)), name


def test_embedding_lookup_mode_and_the_gathered_lookups_give_the_same_rows():
    """Qwen3TTSTalker.lookup gathers `weight[ids]` for more than one id (nn.Embedding for one); +embedding-lookup
    (session 42's A/B) turns that off. Both give the same rows: a frame's summed embeddings, codec and text vectors,
    and one id."""
    bench = load_bench()
    talker, _ = bench.build_talker("tiny", torch.float32, "cpu")
    gen = torch.Generator().manual_seed(3)
    codes = torch.randint(0, talker.cfg.code_predictor.vocab_size, (5, 16), generator=gen)
    text = torch.randint(0, talker.cfg.text_vocab_size, (7,), generator=gen)
    got = {}
    for mode in ("fused", "fused+embedding-lookup"):
        bench.build_mode(talker, mode)
        got[mode] = (talker.embed_frame(codes), talker.embed_codec(codes[:, 0]), talker.embed_text(text),
                     talker.embed_codec(codes[:1, 0]))  # fmt: skip
        assert talker.gather_lookups == (mode == "fused")
    assert all(torch.equal(a, b) for a, b in zip(*got.values(), strict=True))
    want = talker.model.codec_embedding(codes[:, 0])
    assert torch.equal(got["fused"][1], want) and torch.equal(got["fused"][3], want[:1])


def test_replay_tool_runs_a_mode_and_its_halves_to_the_same_codes():
    """tools/replay_talker_step.py (what Nsight Compute runs on the GPU) on this CPU, eager: without fused_draws and
    with its talker half, the same codes after two steps of two rows."""
    import subprocess
    import sys

    mode = "fused+sampler+kv-write+add-norm+norm-rope-write"
    printed = []
    for m in (mode, f"{mode}+fused-draws+talker-draw-only"):
        command = [sys.executable, str(ROOT / "tools" / "replay_talker_step.py"), "--model", "tiny", "--mode", m,
                   "--batch", "2", "--steps", "2", "--max-len", "64", "--prompt-len", "16", "--dtype", "float32",
                   "--device", "cpu"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env=os.environ | {"TRITON_INTERPRET": "1"})  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        printed.append(done.stdout.strip().splitlines()[-1])
    assert printed[0].startswith(f"{mode}: 2 steps of 2 rows; last codes of row 0: [")
    assert printed[0].split(": ", 2)[2] == printed[1].split(": ", 2)[2]


def test_skinny_linear_mode_sets_and_checks_every_gemm():
    """+skinny-linear: build_mode sets every GEMM of the step (and a mode without it takes them back);
    check_skinny_linear measures them against the fp32 product and cuBLAS's F.linear up to each one's rows."""
    from omni.kernels.skinny_linear import dot_from_for, dot_rows_for

    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    bench = load_bench()
    talker, _ = bench.build_talker("tiny", torch.float32, "cpu")
    mode = "fused+sampler+kv-write+add-norm+norm-rope-write"
    bench.build_mode(talker, f"{mode}+skinny-linear")
    report = bench.check_skinny_linear(talker, "cpu")
    gemms = skinny_gemms(talker).values()
    assert report["gemms"] == len(gemms) > 0
    assert report["outputs"] == sum(m.skinny_rows * (m.skinny_rows + 1) // 2 * w.shape[0] for m, w, _ in gemms)
    assert report["kernel"] < 1e-5 and report["cublas"] < 1e-5
    bench.build_mode(talker, f"{mode}+skinny-linear+skinny-dot")  # every GEMM up to 16 rows, 2 and up the dot kernel
    assert all(m.skinny_rows == 16 and m.skinny_dot_from == dot_from_for(w) for m, w, _ in gemms)
    report = bench.check_skinny_linear(talker, "cpu")
    assert report["outputs"] == sum(16 * 17 // 2 * w.shape[0] for _, w, _ in gemms)
    assert report["kernel"] < 1e-5 and report["cublas"] < 1e-5
    bench.build_mode(talker, f"{mode}+skinny-linear+skinny-dot+by-shape+dot-32")  # launches by shape, 32 rows
    assert all(m.skinny_rows == dot_rows_for(w) and m.skinny_by_shape for m, w, _ in gemms)
    bench.build_mode(talker, mode)
    assert bench.check_skinny_linear(talker, "cpu")["gemms"] == 0


def test_silu_down_mode_sets_every_mlp_and_its_check_steps_the_rows_the_kernels_take():
    """+silu-down: build_mode has every fused MLP form SiLU(gate) * up in its down projection's kernel (a mode
    without it takes that back); the bench's bitwise check (on the GPU at 1, 3, 16, 32 and 64 rows: the row kernel,
    the dot kernel, F.linear) finds it equal to the silu_mul path; here at 1 and 5 rows (the row and dot kernels at
    the interpreter's launches on the tiny weights: 64 slots through the interpreter take minutes)."""
    import copy

    from omni.models.qwen3_tts.talker_fused import use_silu_down

    bench = load_bench()
    talker, config = bench.build_talker("tiny", torch.float32, "cpu")
    mode = "fused+kv-write+add-norm+norm-rope-write+skinny-linear+skinny-dot+by-shape+dot-32"  # draws in PyTorch
    mlps = [layer.mlp for layer in [*talker.model.layers, *talker.code_predictor.model.layers]]
    bench.build_mode(talker, f"{mode}+silu-down")
    assert all(m.silu_down for m in mlps)
    apart = copy.deepcopy(talker)
    use_silu_down(apart, on=False)
    flags = bench.runner_flags(bench.mode_extras(mode))
    assert bench.SILU_DOWN_CHECK_ROWS == (1, 3, 16, 32, 64)
    assert [m.down_proj.skinny_dot_from for m in mlps] == [5] * len(mlps)  # [64, 128] and [48, 96] down projections
    same = bench.compare_bitwise([(talker, flags), (apart, flags)], config, 1, "cpu", batches=(1, 5), slots=5)
    assert same == {"codes_equal": True, "caches_equal": True, "hidden_equal": True, "state_equal": True, "steps": 2}
    bench.build_mode(talker, mode)
    assert not any("silu_down" in m.__dict__ for m in mlps)
    assert bench.known_extra("silu-down-to-1") and not bench.known_extra("silu-down-to-0")
    bench.build_mode(talker, f"{mode}+silu-down+silu-down-to-1")  # only the 1-row forwards
    assert all(m.silu_down == 1 for m in mlps)


def test_the_checks_give_the_talker_a_cache_past_the_short_launch():
    """The bitwise checks step the talker with a cache longer than SHORT_CACHE, so its attention takes the launch the
    timed steps and the service take (4 warps), not the code predictor's (1 warp): run 205's 34-position checks found
    the norm + RoPE + attention kernel not equal there, run 206's 65-position ones equal."""
    from omni.kernels.decode_attention import LAUNCH, LAUNCH_SHORT, SHORT_CACHE

    bench = load_bench()
    assert all(bench.check_len(steps) > SHORT_CACHE for steps in (1, 2, 12))
    assert bench.check_len(40) == bench.PROMPT_LEN + 40 + 8  # longer runs as long as they need
    assert LAUNCH["num_warps"] != LAUNCH_SHORT["num_warps"]


def test_pdl_mode_turns_programmatic_launch_on_and_a_mode_without_it_off(monkeypatch):
    """+pdl: build_mode turns the process-wide programmatic launch on for the mode's runner and graphs (+early-weights
    too: the GEMMs' first weights before their wait); every other mode turns both off (its check, graphs with and
    without it, needs a GPU)."""
    from omni.kernels import programmatic_launch

    from omni.launch_rows import launching_rows

    bench = load_bench()
    talker, _ = bench.build_talker("tiny", torch.float32, "cpu")
    monkeypatch.setattr(programmatic_launch, "INTERPRETED", False)  # read the switch as a GPU launch would
    mode = "fused+kv-write+add-norm+norm-rope-write+skinny-linear"
    try:
        bench.build_mode(talker, f"{mode}+pdl")
        assert programmatic_launch.launch_options() == {"PDL": True, "launch_pdl": True}
        assert not programmatic_launch.early_weights()
        bench.build_mode(talker, f"{mode}+pdl+early-weights")
        assert programmatic_launch.programmatic_launch() and programmatic_launch.early_weights()
        bench.build_mode(talker, f"{mode}+pdl+pdl-to-16")  # only inside steps of at most 16 rows
        assert not programmatic_launch.programmatic_launch()
        with launching_rows(16):
            assert programmatic_launch.programmatic_launch()
        with launching_rows(17):
            assert not programmatic_launch.programmatic_launch()
        bench.build_mode(talker, mode)
        assert programmatic_launch.launch_options() == {"PDL": False, "launch_pdl": False}
        assert not programmatic_launch.early_weights()
    finally:
        programmatic_launch.set_programmatic_launch(False)


def expand_variables(text: str, names: dict[str, str]) -> str:
    """$X in text replaced by names["X"] where it is defined (one-letter names, as the device scripts use)."""
    return re.sub(r"\$([A-Z])\b", lambda m: names.get(m.group(1), m.group(0)), text)


def test_the_next_device_scripts_name_only_modes_the_bench_takes():
    """Every mode list a tools/device/next_*.sh script hands bench_talker_step (through talker_order or --modes, with
    its mode variables expanded), and every mode variable itself, parses: an unknown extra would cost a device call's
    machine start before the bench refuses it."""
    bench = load_bench()
    lists = []
    for script in sorted((ROOT / "tools" / "device").glob("next_*.sh")):
        text = script.read_text()
        names: dict[str, str] = {}  # the script's mode variables (M=..., E=$M+...), each expanded as bash would
        for name, value in re.findall(r"^([A-Z])=(\S+)$", text, flags=re.M):
            names[name] = expand_variables(value, names)
            lists.append(names[name])  # a mode variable: a mode list too (sweep_gemm_launch.py checks its own is M)
            assert bench.parse_modes(names[name]), (script.name, name)
        for found in re.findall(r'(?:^talker_order \S+ \S+ |--modes )"([^"]+)"', text, flags=re.M):
            modes = expand_variables(found, names)
            assert "$" not in modes, (script.name, found)
            assert bench.parse_modes(modes), (script.name, modes)
            lists.append(modes)
    m_ends = "+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables"  # M: today's defaults
    assert any(modes.endswith(m_ends) for modes in lists)


def test_exposed_time_splits_overlapped_kernels_into_the_busy_time():
    """Under programmatic launch a kernel starts before the one ahead ends and waits: its span overlaps. The exposed
    parts count each moment once, to the kernel that ended it past the ones before, and sum to the spans' union (gaps
    are in neither); spans given out of order are taken in start order, and each launch's part is given in the order
    of the spans (what --profile-kernel reports call by call)."""
    bench = load_bench()
    spans = [
        ("gemm", 0.0, 10.0),
        ("silu", 4.0, 12.0),  # launched early: 6 us of its 8 are the wait for the GEMM
        ("norm", 20.0, 23.0),  # after a gap
        ("draw", 21.0, 22.0),  # inside the norm's span entirely
        ("gemm", 22.5, 30.0),
    ]
    exposed = bench.exposed_time(list(reversed(spans)))
    assert bench.exposed_parts(list(reversed(spans))) == [7.0, 0.0, 3.0, 2.0, 10.0]  # each launch's, in the order given
    assert exposed == {"gemm": 10.0 + 7.0, "silu": 2.0, "norm": 3.0, "draw": 0.0}  # the 2nd GEMM from the norm's end
    assert sum(exposed.values()) == 12.0 + 10.0  # [0, 12] and [20, 30], the union
    serial = [("a", 0.0, 1.5), ("b", 1.5, 4.0), ("a", 5.0, 6.0)]
    assert bench.exposed_time(serial) == {"a": 2.5, "b": 2.5}  # without overlap, each kernel's own durations


def test_span_totals_sum_kernels_that_share_a_name():
    """The spans' view sums every launch of a name (the kept prefix of two kernels is one name) and counts them; what
    it reports is what exposed_time splits, so no kernel's exposed time passes its spans."""
    bench = load_bench()
    spans = [("index", 0.0, 2.0), ("gemm", 1.0, 6.0), ("index", 6.0, 9.5), ("gemm", 9.0, 10.0)]
    totals = bench.span_totals(spans)
    assert totals == {"index": (5.5, 2), "gemm": (6.0, 2)}
    exposed = bench.exposed_time(spans)
    assert all(exposed[name] <= total for name, (total, _) in totals.items())
    assert sum(total for total, _ in totals.values()) - sum(exposed.values()) == 1.0 + 0.5  # the two overlaps


def test_gemm_calls_name_each_gemm_launch_of_a_step_in_order_with_its_rows():
    """gemm_calls (what --profile-kernel's GEMM calls multiply by): one eager step's GEMM kernel launches, each named
    as skinny_gemms names its weight, with its rows. The predictor's 15 passes, each its projection, every layer's four
    GEMMs and its pass's head; then the text projection, the backbone's layers and the codec head, once each. The same
    weights at 1 and 3 rows (the row kernel, then the dot kernel), the first pass's layers at 2 rows a slot, and the
    kernels' launcher is put back. Through F.linear (cuBLAS, past the kernels' rows) the same calls."""
    import torch.nn.functional as F
    from omni.kernels.skinny_linear import _skinny_linear_dot_kernel, _skinny_linear_kernel

    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    bench = load_bench()
    talker, config = bench.build_talker("tiny", torch.float32, "cpu")
    mode = "fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32"
    bench.build_mode(talker, mode)
    runner = bench.timed_runner(talker, config, mode, 4, 64, "cpu", 8)
    run = type(_skinny_linear_kernel).run, type(_skinny_linear_dot_kernel).run
    one, three = bench.gemm_calls(runner, torch.arange(1)), bench.gemm_calls(runner, torch.arange(3))
    assert (type(_skinny_linear_kernel).run, type(_skinny_linear_dot_kernel).run) == run
    names = [name for name, _ in one]
    assert names == [name for name, _ in three] and set(names) <= set(skinny_gemms(talker))
    layers = ["self_attn.qkv_weight", "self_attn.o_proj.weight", "mlp.gate_up_weight", "mlp.down_proj.weight"]
    backbone = [f"model.layers.{i}.{gemm}" for i in range(config.talker.num_hidden_layers) for gemm in layers]
    depth = config.talker.code_predictor.num_hidden_layers
    predictor = [f"code_predictor.model.layers.{i}.{gemm}" for i in range(depth) for gemm in layers]
    passes = [["code_predictor.small_to_mtp_projection.weight", *predictor, f"code_predictor.lm_head.{g}.weight"]
              for g in range(config.talker.num_code_groups - 1)]  # fmt: skip
    text = ["text_projection.linear_fc1.weight", "text_projection.linear_fc2.weight"]
    assert names == [name for p in passes for name in p] + text + backbone + ["codec_head.weight"]
    # Rows: the first pass runs [past hidden, codebook 0] through the predictor's layers, 2 positions a slot.
    for slots, calls in ((1, one), (3, three)):
        first = [rows for name, rows in calls[: len(passes[0])] if name.startswith("code_predictor.model.")]
        assert first == [2 * slots] * len(predictor)
        assert {rows for _, rows in calls[len(passes[0]) :]} == {slots}  # every other call: a row a slot
    # Past the kernels' rows the same GEMMs go through F.linear (cuBLAS): the same calls, and F.linear is put back.
    linear = F.linear
    plain = bench.build_talker("tiny", torch.float32, "cpu")[0]
    bench.build_mode(plain, "fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws")
    assert bench.gemm_calls(bench.timed_runner(plain, config, "fused", 4, 64, "cpu", 8), torch.arange(3)) == three
    assert F.linear is linear


def test_gemm_table_sums_each_weights_launches_across_layers_and_passes():
    """gemm_table (the per-weight view of --profile-kernel's GEMM calls): each layer's weight of one name is one row
    (`layers.*`), its launches and exposed µs summed, TB/s its bytes over that time, TFLOP/s its calls' multiply-adds
    (each call's own rows) over it; a name gemm_calls gave by shape only has neither; the most time first."""
    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    bench = load_bench()
    talker, config = bench.build_talker("tiny", torch.float32, "cpu")
    bench.build_mode(talker, "fused+skinny-linear+skinny-dot+by-shape+dot-32")
    gemms = skinny_gemms(talker)
    names = [*gemms, *gemms, "[7, 5]"]  # every weight twice (512 rows, then 1,024), then one of no known name
    calls = [(name, 512 if i < len(gemms) else 1024) for i, name in enumerate(names)]
    exposed = [float(i % 7 + 1) for i in range(len(names))]
    table = bench.gemm_table(talker, calls, exposed)
    assert sum(row["launches"] for row in table) == len(names)
    assert abs(sum(row["us"] for row in table) - sum(exposed)) < 1e-6
    assert [row["us"] for row in table] == sorted((row["us"] for row in table), reverse=True)
    layers = config.talker.num_hidden_layers
    (qkv,) = [row for row in table if row["weight"] == "model.layers.*.self_attn.qkv_weight"]
    weight = gemms["model.layers.0.self_attn.qkv_weight"][1]
    want_us = sum(us for name, us in zip(names, exposed, strict=True) if name.endswith("self_attn.qkv_weight")
                  and name.startswith("model."))  # fmt: skip
    assert qkv["launches"] == 2 * layers and qkv["shape"] == list(weight.shape) and qkv["us"] == round(want_us, 1)
    assert qkv["tb_per_s"] == round(2 * layers * weight.nbytes / want_us / 1e6, 2)
    # Each layer's call at 512 rows and at 1,024: 2 * rows * N * K flops a call.
    flops = layers * 2 * (512 + 1024) * weight.shape[0] * weight.shape[1]
    assert qkv["tflop_per_s"] == round(flops / want_us / 1e6, 1)
    (unknown,) = [row for row in table if row["weight"] == "[7, 5]"]
    assert unknown["tb_per_s"] is None and unknown["tflop_per_s"] is None and unknown["launches"] == 1


def test_a_pin_extra_pins_the_dot_launch_of_its_shape_only_and_a_mode_without_it_unpins():
    """+pin-NxK-BNxBKsSkP (a launch A/B): build_mode pins that dot launch on every GEMM whose weight is [N, K] and no
    other; the next mode's build without the extra takes it off; a malformed pin is an unknown mode."""
    from omni.kernels.skinny_linear import dot_launch

    from omni.models.qwen3_tts.talker_fused import skinny_gemms

    bench = load_bench()
    talker, _ = bench.build_talker("tiny", torch.float32, "cpu")
    base = "fused+skinny-linear+skinny-dot+by-shape+dot-32"
    bench.build_mode(talker, base)
    gemms = skinny_gemms(talker)
    shape = tuple(talker.model.layers[0].self_attn.o_proj.weight.shape)
    pin = f"pin-{shape[0]}x{shape[1]}-64x128s4k2"
    assert bench.parse_modes(f"{base}+{pin}") == [f"{base}+{pin}"]
    bench.build_mode(talker, f"{base}+{pin}")
    pinned = {name for name, (m, _, _) in gemms.items() if "skinny_launch" in m.__dict__}
    assert pinned == {name for name, (_, w, _) in gemms.items() if tuple(w.shape) == shape} and pinned
    o_proj = talker.model.layers[0].self_attn.o_proj
    assert o_proj.skinny_launch == dot_launch(64, 128, num_stages=4, split_k=2)
    bench.build_mode(talker, base)
    assert not any("skinny_launch" in m.__dict__ for m, _, _ in gemms.values())
    for bad in ("pin-1024x2048-64x128s4", "pin-1024x2048-64x128s0k1", "pin-0x2048-64x128s4k1"):
        with pytest.raises(SystemExit, match="unknown modes"):
            bench.parse_modes(f"{base}+{bad}")


def test_fresh_slots_prefill_again_before_a_timing_would_step_a_finished_slot():
    """The bench's and the sweep's slots never take a step past their max_new_tokens: `reserve` prefills them again
    first, and each reserved run of steps then finishes no slot before its last step (the runner's contract)."""
    bench = load_bench()
    talker, config = bench.build_talker("tiny", torch.float32, "cpu")
    runner = bench.timed_runner(talker, config, "sdpa", 2, 14, "cpu", 8)  # 6 ids a prefill: 5 steps
    fresh = bench.FreshSlots(runner, prompt_len=8)
    slots = torch.arange(2)
    for steps in (3, 2, 3, 5):  # 3 + 2 use the first prefill up; 3 and 5 each need another
        fresh.reserve(steps)
        for _ in range(steps):
            finished = runner.decode_step(slots)[1]
            used = int(runner.drawn[0]) - 1  # steps since the prefill (which drew the first id)
            assert finished.tolist() == [used == fresh.per_prefill] * 2
        assert used == fresh.per_prefill - fresh.left
    assert fresh.prefills == 2 and fresh.per_prefill == 5
    with pytest.raises(ValueError, match="more than a prefill"):
        fresh.reserve(6)


def test_projected_lookups_mode_sets_the_runner_flag_and_its_check_counts_agreeing_codes():
    """+projected-lookups: the runner's projected_lookups flag; the bench's check (not bitwise: the tables' sums run in
    another order) steps it against the projection and counts the codes that agree, all of them in fp32 here."""
    bench = load_bench()
    talker, config = bench.build_talker("tiny", torch.float32, "cpu")
    assert bench.runner_flags(bench.mode_extras("fused+sampler+projected-lookups"))["projected_lookups"]
    assert not bench.runner_flags(bench.mode_extras("fused+sampler"))["projected_lookups"]
    both = bench.runner_flags(bench.mode_extras("fused+sampler+projected-lookups+lookup-kernels"))
    assert both["projected_lookups"] and both["lookup_kernels"] and not both["step_input_kernel"]
    assert bench.runner_flags(bench.mode_extras("fused+sampler+step-inputs"))["step_input_kernel"]
    out = bench.compare_projected_lookups(talker, {}, config, 2, "cpu")
    equal, total = map(int, out["codes_equal"].split("/"))
    assert total == 2 * 64 * 16 and equal == total
    assert out["first_step_hidden_max_abs_diff"] <= 1e-5 * out["hidden_max_abs"]


def test_each_flag_check_compares_the_mode_against_its_flag_set_otherwise():
    """FLAG_CHECKS: each extra is one the bench takes, its flag a TalkerRunner flag the extra sets, and the build it is
    checked against has that flag the other way (a wrong name or value would compare a build with itself)."""
    bench = load_bench()
    for column in (0, 3):  # one check an extra, one result key a check
        assert len({check[column] for check in bench.FLAG_CHECKS}) == len(bench.FLAG_CHECKS)
    for extra, flag, value, _, _ in bench.FLAG_CHECKS:
        assert extra in bench.MODE_EXTRAS, extra
        with_extra = bench.runner_flags(bench.mode_extras(f"fused+{extra}"))
        without = bench.runner_flags(bench.mode_extras("fused"))
        assert with_extra[flag] == (not value) and without[flag] == value, extra
    # A mode with every extra: each compared build is one the runner takes (no flag on without the one it needs), and
    # differs from the mode in the check's flag.
    every = bench.runner_flags(set(bench.MODE_EXTRAS))
    assert every["step_rope_tables"] and every["step_input_kernel"]
    for extra, flag, value, _, _ in bench.FLAG_CHECKS:
        other = bench.flag_set_otherwise(every, flag, value)
        assert other[flag] == value and other[flag] != every[flag], extra
        assert all(other[needed] or not other[needing] for needing, needed in bench.FLAG_NEEDS.items()), extra
    assert not bench.flag_set_otherwise(every, "step_input_kernel", False)["step_rope_tables"]
    assert bench.flag_set_otherwise(every, "step_write_kernel", False)["step_rope_tables"]
    assert every["norm_rope_attention_kernel"]
    assert not bench.flag_set_otherwise(every, "norm_rope_write_kernel", False)["norm_rope_attention_kernel"]


def test_fp8_kv_mode_asks_for_an_fp8_cache_and_its_write_check_runs():
    """+fp8-kv: the runner's talker cache in fp8; the bench's GPU check of the write kernels' bits, run here through
    the interpreter, finds them equal to to_fp8's (a wrong rounding there fails tests/test_fp8_kv_cache.py too)."""
    bench = load_bench()
    assert bench.runner_flags(bench.mode_extras("fused+sampler+fp8-kv"))["kv_cache_dtype"] == torch.float8_e4m3fn
    assert bench.runner_flags(bench.mode_extras("fused+sampler"))["kv_cache_dtype"] is None
    checks = bench.check_fp8_writes("cpu")
    assert set(checks) == {"write_kv_torch.bfloat16", "write_kv_torch.float32", "norm_rope_write"}
    assert all(checks.values()), checks
