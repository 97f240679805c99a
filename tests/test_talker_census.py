"""tools/census_talker_step.py: what one talker decode step launches, counted on the CPU (the service's CUDA build,
its Triton kernels under the interpreter)."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_census_counts_the_launches_that_kept_rope_frequencies_remove(tmp_path):
    """With RoPE's frequencies kept per device (Decoder.rope_frequencies, the default) a decode step runs none of the
    6 ops that make them (arange, div, pow, reciprocal, mul, cat), and with the code predictor's attention inputs made
    once by the runner (predictor_tables) its 15 passes run none of the 4 that make them (mul, cos, sin for RoPE, an
    add for the lengths): cos and sin only for the backbone. Made by every forward, 6 more a forward (16 a step) and
    4 more a predictor pass. Either way each codebook is embedded once, by one gather (the talker's input sums the
    embeddings the passes made) and the predictor's 15 draws write their row of the group-major codes themselves,
    with their counters' offsets added in the kernel. With `fused_draws` (the default) the talker's draw is one kernel
    with its processors and the slots' counters, and no draw gathers its sampling parameters (each kernel reads them
    at the row's slot).
    The kernels the service's settings turn on are each counted per layer as built; with `skinny_linear` and
    `skinny_linear_dot` (the defaults) every GEMM at these 2 rows is the row kernel's but the codec head's (3,072
    outputs: the dot kernel from 2 rows); none is cuBLAS's (`skinny_linear_silu_down`, which takes the silu_mul
    kernels out, is tests/test_skinny_linear.py's). With `projected_lookups` the code predictor's
    passes 2..15 each gather their input from a projected table instead of running the projection's GEMM, and with
    `lookup_kernels` as well (both the defaults since session 54; the runs before those are asked with them off)
    those gathers and the frame's embedding sum are Triton kernels, the sum's kernel adding the text vector too. The
    decode-attention kernel reads a 2-position pass's slot at row // 2 (the code predictor's first pass): no copy of
    the slots repeated. With
    `step_input_kernel` (the default since session 55; the runs before it are asked with it off) the step's 15
    PyTorch gathers, selects and copies at its slots before the first pass, and the draw counter's multiply, are one
    Triton kernel; with
    `step_write_kernel` too its 8 writes at its slots after the draw (next positions, histories, last hidden states,
    the scratch reset) are one more, and with `step_rope_tables` (the default since session 56; the runs before it are
    asked with it off) the talker forward's RoPE rows and key counts come from the step input kernel (4 PyTorch
    kernels fewer, no launch more). The text projection's SiLU is a kernel of the fused talker, so with today's
    defaults and the step write kernel a step runs no PyTorch kernel."""
    runs = {}
    before_inputs = {"OMNI_TALKER_STEP_INPUT_KERNEL": "0"}  # the default since session 55 (and the tables with it)
    before_tables = {"OMNI_TALKER_STEP_ROPE_TABLES": "0"}  # the default since session 56
    plain = {"OMNI_TALKER_PROJECTED_LOOKUPS": "0", "OMNI_TALKER_LOOKUP_KERNELS": "0", **before_inputs}
    apart = {"OMNI_TALKER_FUSED_DRAWS": "0", **plain}  # the draws' processors and counters as PyTorch ops
    runs_asked = (("kept", ["--sites"], apart), ("per_forward", ["--rope-per-forward"], apart),
                  ("fused_draws", ["--sites"], plain),
                  ("projected", ["--sites"], {"OMNI_TALKER_PROJECTED_LOOKUPS": "1", "OMNI_TALKER_LOOKUP_KERNELS": "0",
                                              **before_inputs}),
                  ("lookup_kernels", ["--sites"], before_inputs),
                  ("step_inputs", ["--sites"], before_tables),
                  ("step_rope_tables", [], {}),
                  ("no_torch_ops", ["--sites"], {"OMNI_TALKER_STEP_WRITE_KERNEL": "1"}))  # fmt: skip

    def census(name: str, extra: list[str], env: dict) -> subprocess.CompletedProcess:
        cmd = [sys.executable, str(ROOT / "tools/census_talker_step.py"), "--out", str(tmp_path / f"{name}.json"),
               *extra]  # fmt: skip
        return subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=900)

    # Two at a time, one a core: each is ~35 s of one core alone; all at once on two cores, beside the other test
    # worker, the first took over 300 s in a CI run.
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip([r[0] for r in runs_asked], pool.map(lambda run: census(*run), runs_asked), strict=True))
    for name, proc in done.items():
        assert proc.returncode == 0, (name, proc.stderr[-3000:])
        runs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    kept, per_forward = runs["kept"], runs["per_forward"]
    forwards = kept["forwards"]
    assert forwards == 16
    for op in ("arange", "pow", "reciprocal", "cat"):
        assert op not in kept["ops"] and per_forward["ops"][op] == forwards, op
    passes = forwards - 1
    assert kept["ops"]["cos"] == kept["ops"]["sin"] == 1 and per_forward["ops"]["cos"] == forwards
    assert per_forward["total"] - kept["total"] == 6 * forwards + 4 * passes
    for run in (kept, per_forward):
        assert "embedding" not in run["ops"]  # every lookup of these 2 rows a gather (Qwen3TTSTalker.lookup)
        assert run["ops"]["copy_"] == 2  # codebook 0 into the codes and the EOS block: no copy after a draw
    assert kept["launches"] == per_forward["launches"]  # the Triton kernels are the same either way
    layers = kept["layers"]["backbone"] + (forwards - 1) * kept["layers"]["code_predictor"]
    assert kept["launches"]["_norm_rope_write_kernel"] == layers  # one per attention: q/k norms, RoPE, K/V write
    assert kept["launches"]["_decode_attention_kernel"] == layers
    assert kept["launches"]["_draw_kernel"] == forwards  # one sampling draw per codebook
    assert "mm" not in kept["ops"]  # every GEMM below
    gemms_a_layer = 4  # fused q/k/v, o_proj, fused gate/up, down_proj
    projections = 2 + passes  # the text projection's two Linears; the predictor's input projection once a pass
    heads = passes  # the predictor's 15 heads (2,048 outputs: the row kernel up to 2 rows)
    assert kept["launches"]["_skinny_linear_kernel"] == gemms_a_layer * layers + projections + heads
    assert kept["launches"]["_skinny_linear_dot_kernel"] == 1  # the codec head
    # --sites: every PyTorch op at the line of the repo's packages that ran it.
    sites = kept["sites"]
    assert sum(sites.values()) == kept["torch_ops"] and "sites" not in per_forward
    # fused_draws: codebook 0's draw takes the talker's processors and the slots' counters; no draw gathers its
    # parameters, so sampling runs no PyTorch op (the predictor's draw counter, frame * 16, is the runner's multiply).
    fused = runs["fused_draws"]
    assert fused["launches"]["_draw_kernel"] == forwards - 1 and fused["launches"]["_draw_talker_kernel"] == 1
    assert "_draw_talker_kernel" not in kept["launches"]
    runner_source = (ROOT / "omni/talker/model_runner.py").read_text().splitlines()
    counter_line = runner_source.index("            counter = frame * DRAWS_PER_FRAME") + 1
    counter = f"mul at omni/talker/model_runner.py:{counter_line}"
    assert not any("omni/talker/sampling.py" in site for site in fused["sites"]) and fused["sites"][counter] == 1
    assert sum(n for site, n in sites.items() if "omni/talker/sampling.py" in site) > 20  # processors and gathers
    assert fused["ops"]["copy_"] == 1  # the EOS block's copy is in the kernel
    assert kept["total"] - fused["total"] == 34, (kept["total"], fused["total"])  # tiny: 449 -> 415
    assert all(" at omni/" in site or " at kernels/" in site or " at services/" in site for site in sites), sites
    talker_source = (ROOT / "omni/models/qwen3_tts/talker.py").read_text().splitlines()
    # rows_per_slot: the decode-attention kernel reads a 2-position pass's slots itself; no copy in the model
    assert not any(site.startswith(("clone", "repeat_interleave")) and "qwen3_tts" in site for site in sites), sites
    # Every lookup is the talker's one gather line: the 16 codebooks and the text id, each looked up once.
    line = talker_source.index("            return table.weight[ids]") + 1
    assert sites[f"index at omni/models/qwen3_tts/talker.py:{line}"] == forwards + 1
    assert fused["launches"]["_silu_mul_kernel"] == layers
    # projected_lookups: passes 2..15 look their input up (one more gather each) instead of projecting it (one GEMM
    # fewer each); every other launch as without.
    projected, gathers = runs["projected"], f"index at omni/models/qwen3_tts/talker.py:{line}"
    assert fused["launches"]["_skinny_linear_kernel"] - projected["launches"]["_skinny_linear_kernel"] == passes - 1
    assert {k: n for k, n in projected["launches"].items() if k != "_skinny_linear_kernel"} == {
        k: n for k, n in fused["launches"].items() if k != "_skinny_linear_kernel"
    }
    assert projected["sites"][gathers] - fused["sites"][gathers] == passes - 1
    assert projected["total"] == fused["total"]
    # lookup_kernels with it: each pass's input gathered by a kernel, and no talker-width lookup or add in the passes
    # (the frame summed by one kernel after them): of the 16 codebooks' lookups only codebook 0's is PyTorch's, and of
    # the step's adds none is the frame's.
    kernels = runs["lookup_kernels"]
    assert kernels["launches"]["_gather_rows_kernel"] == passes - 1 and kernels["launches"]["_frame_sum_kernel"] == 1
    assert kernels["sites"][gathers] == 2  # codebook 0 and the text id
    pass_add = "add at omni/talker/model_runner.py:{}".format(
        runner_source.index("            frame_embedding = frame_embedding + embedding") + 1
    )
    assert fused["sites"][pass_add] == passes - 1 and pass_add not in kernels["sites"]
    last_adds = "            x = frame_embedding + t.lookup(predictor.codec_embedding[-1], codes[-1]) + text"
    text_add = f"add at omni/talker/model_runner.py:{runner_source.index(last_adds) + 1}"  # codebook 15's, the text's
    assert fused["sites"][text_add] == 2 and text_add not in kernels["sites"]
    assert fused["torch_ops"] - kernels["torch_ops"] == 2 * passes + 1  # codebooks 1..15: a lookup and an add each
    assert fused["total"] - kernels["total"] == 2 * passes  # and 14 GEMMs for 14 gathers, and the sum's kernel
    # step_input_kernel on top: the step's reads at its slots (drawn, frame, codebook 0's id into the codes, its
    # embedding, the last hidden state and the stack, the trailing text id's select and row, the position) in one
    # kernel; no PyTorch lookup is left in the step.
    inputs = runs["step_inputs"]
    assert inputs["launches"]["_step_inputs_kernel"] == 1 and "_step_inputs_kernel" not in kernels["launches"]
    assert kernels["torch_ops"] - inputs["torch_ops"] == 16 and kernels["total"] - inputs["total"] == 15
    assert counter in kernels["sites"] and counter not in inputs["sites"]
    assert gathers not in inputs["sites"] and "stack" not in inputs["ops"] and "where" not in inputs["ops"]
    # step_rope_tables (with the step input kernel): the talker forward's RoPE rows (mul, cos, sin) and key counts (add)
    # read by that kernel from tables made once; no RoPE op is left in the step.
    rope = runs["step_rope_tables"]
    assert rope["launches"] == inputs["launches"] and inputs["ops"]["cos"] == inputs["ops"]["sin"] == 1
    assert "cos" not in rope["ops"] and "sin" not in rope["ops"]
    assert inputs["torch_ops"] - rope["torch_ops"] == 4 and inputs["total"] - rope["total"] == 4
    # Today's defaults with step_write_kernel too: the writes after the draw (the next position's add and index_put,
    # the drawn ids into the histories, the last hidden states, the scratch slot's 4 fills) in one kernel, so the step
    # runs no PyTorch kernel (the text projection's SiLU is a kernel of fuse_talker_kernels), and every launch can wait
    # for the one ahead and let the next one in early.
    assert rope["ops"] == {"add": 1, "index_put_": 3, "fill_": 4}, rope["ops"]  # the writes after the draw
    none = runs["no_torch_ops"]
    assert none["torch_ops"] == 0 and not none["sites"] and none["launches"]["_silu_kernel"] == 1
    assert none["launches"]["_step_writes_kernel"] == 1 and "_step_writes_kernel" not in rope["launches"]
    assert {k: n for k, n in none["launches"].items() if k != "_step_writes_kernel"} == rope["launches"]
    assert rope["total"] - none["total"] == 7
    assert "silu" not in kept["ops"] and kept["launches"]["_silu_kernel"] == 1  # with the fused kernels, always
