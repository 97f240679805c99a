# Next one-GPU call (nvidia-h200, ~9 minutes): the codec's transformer kernels (`transformer_kernels`, with session
# 24's fix for 1-frame steps), its RVQ lookup kernel (`rvq_kernel`) and its window attention kernel
# (`attention_kernel`, built in session 24 after the runs) in the codec step benchmark, each against today's default
# (the fast sine and the K/V window kernel on), every build twice in alternating processes, then one run with all
# checks.
# Why: in session 24 both looked faster (run 91: transformer kernels 128x2 8.91 -> 8.28 ms; run 92: RVQ kernel 8.89
# -> 8.06), but the same build measured 8.28 and 8.89 ms in two processes (each autotunes its own cuDNN algorithms),
# and both runs' graph checks errored on the RoPE kernel's stride bug (fixed: 551ebaa). SDPA over the mask was 0.87 ms
# of the 128x2 eager step's 7.44 ms of CUDA time (run 91's profile): ~38 MB of keys and values a layer.
# Predictions (fused-cl+graph, 128 rows, medians of two processes): W (today's default) 128x2 8.3-9.0 ms, 128x15
# 36.5-38.0; WT (+ transformer kernels) 128x2 -4-8%, 128x15 -1-3%; WR (+ RVQ kernel) 128x2 -2-5%, 128x15 -0.5-3%; WA
# (+ attention kernel) 128x2 -3-7%, 128x15 -1-3%; the checks run: every check passes (window and RVQ kernels bitwise,
# transformer and attention kernels within their bounds, graph = eager bitwise at a full bucket with 1-frame steps).
# Rules, written before the run: `transformer_kernels` turns on by default if every check of the checks run passes
# and WT's median 128x2 graph step is >= 3% shorter than W's; `rvq_kernel` turns on if every check passes and WR's
# median 128x2 step is >= 1.5% shorter than W's; `attention_kernel` turns on if every check passes and WA's median
# 128x2 step is >= 3% shorter than W's.
source tools/device/setup.sh
stamp start
B="python3 tools/bench_codec.py --fast-sine --window-kernel --modes fused-cl+graph --batches 128 --chunks 2 15 \
--cudnn-benchmark --min-seconds 0.5 --no-checks"
for round in 1 2; do
    $B --out $OUT/W_$round.json 2>&1 | grep "^fused-cl+graph"
    $B --transformer-kernels --out $OUT/WT_$round.json 2>&1 | grep "^fused-cl+graph"
    $B --rvq-kernel --out $OUT/WR_$round.json 2>&1 | grep "^fused-cl+graph"
    $B --attention-kernel --out $OUT/WA_$round.json 2>&1 | grep "^fused-cl+graph"
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
