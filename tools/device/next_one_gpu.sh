# Next one-GPU call (nvidia-h200, ~9 minutes): three codec-step changes, each against today's default (the fast sine
# and the K/V window kernel on), in the codec step benchmark, then one run with all checks:
# - the RVQ lookup kernel (`rvq_kernel`) and the window attention kernel (`attention_kernel`, built in session 24
#   after the runs): plain switches, so one process times the step with each against the build without
#   (`bench_codec.py --ab`, 4 rounds alternating: the same cuDNN algorithms on every side);
# - the transformer through the talker's fused kernels (`transformer_kernels`, with session 24's fix for 1-frame
#   steps): fused in place, so two processes each of W (today's default) and WT, alternating.
# Why: in session 24 run 91 gave the transformer kernels 128x2 8.91 -> 8.28 ms and run 92 the RVQ kernel 8.89 ->
# 8.06, but the same build measured 8.28 and 8.89 ms in two processes (each autotunes its own cuDNN algorithms), and
# both runs' graph checks errored on the RoPE kernel's stride bug (fixed: 551ebaa). SDPA over the mask was 0.87 ms of
# the 128x2 eager step's 7.44 ms of CUDA time (run 91's profile).
# Predictions (fused-cl+graph, 128 rows, medians): base 128x2 8.3-9.0 ms, 128x15 36.5-38.0; RVQ kernel 128x2 -2-5%,
# 128x15 -0.5-3%; attention kernel 128x2 -3-7%, 128x15 -1-3%; WT against W 128x2 -4-8%, 128x15 -1-3%; the checks
# run: every check passes (window and RVQ kernels bitwise, transformer and attention kernels within their bounds,
# graph = eager bitwise at a full bucket with 1-frame steps).
# Rules, written before the run: `rvq_kernel` turns on by default if every check of the checks run passes and its
# in-process median 128x2 step is >= 1.5% shorter than the base's; `attention_kernel` the same at >= 3%;
# `transformer_kernels` if every check passes and WT's median 128x2 step over its two processes is >= 3% shorter
# than W's.
source tools/device/setup.sh
stamp start
B="python3 tools/bench_codec.py --fast-sine --window-kernel --modes fused-cl+graph --batches 128 --chunks 2 15 \
--cudnn-benchmark --min-seconds 0.5 --no-checks"
$B --ab rvq_kernel,attention_kernel --ab-rounds 4 --out $OUT/ab.json 2>&1 | grep -E '^\{"ab"|"error"'
stamp ab
for round in 1 2; do
    $B --out $OUT/W_$round.json 2>&1 | grep "^fused-cl+graph"
    $B --transformer-kernels --out $OUT/WT_$round.json 2>&1 | grep "^fused-cl+graph"
    stamp "round $round"
done
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 --cudnn-benchmark --min-seconds 0.3 \
    --out $OUT/checks.json 2>&1 | grep -E '"check"|"error"' | cut -c1-400
stamp checks
python3 - <<'PY'
import glob, json, os, statistics
out = os.environ["OUT"]
step = {}
for path in sorted(glob.glob(f"{out}/W*_?.json")):
    build = os.path.basename(path).rsplit("_", 1)[0]
    for row in json.load(open(path))["rows"]:
        step.setdefault((build, row["chunk"]), []).append(row["step_ms"])
for (build, chunk), values in sorted(step.items()):
    base = statistics.median(step[("W", chunk)])
    mid = statistics.median(values)
    print(f"{build:3s} 128x{chunk:<3d} {values} median {mid:.3f} ms ({100 * (mid / base - 1):+.1f}% against W)")
PY
