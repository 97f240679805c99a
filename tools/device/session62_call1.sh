# Run 224 (session 62, call 1) = (1) the codec's graphs by kernel with today's defaults: a 128x15 and a 128x2 replay
# (bench_codec_ticks --kernels), last profiled in run 137 (session 36, an H200) before unit_tail_kernel,
# residual_snake_kernel, the history kernels and upsample_channels_last; (2) the same build with cuDNN's autotuner
# trying every algorithm (--cudnn-benchmark-limit 0; torch's default tries 10), its graphs' replay times against (1)'s;
# (3) on an H100, next_one_gpu.sh's card: the 512-row talker step's decode attention call by call.
# Why: under MPS at 512 streams the codec is ~0.54 of the GPU's time (run 219), as much as the talker, and nothing
# says which of its kernels that is today.
# Prediction: (1) the convs (cuDNN conv / implicit GEMM kernels and the unit-tail Triton GEMMs) >= 55% of the 128x15
# replay's device time, SnakeBeta kernels 10-20%, the transformer's kernels < 10%; (2) every algorithm: the 15-frame
# graphs within 3% of (1)'s (two processes: a graph's replay_ms varies ~2% between builds); (3) as next_one_gpu.sh's
# header. Rule: if (2)'s 128x15 and 64x15 are both >= 5% faster than (1)'s, a stack A/B of the setting follows.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 128x15 128x2 --rows 128 --ticks 1 --iters 3 \
    --out $OUT/codec_ticks.json > $OUT/codec_ticks.txt 2>&1
grep -E "Traceback|rror|replay_ms" $OUT/codec_ticks.txt | cut -c1-400
python3 - $OUT/codec_ticks.txt <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith('{"kernels"'):
        continue
    for key, c in json.loads(line)["kernels"].items():
        for side in ("replay", "eager"):
            k = c[side]
            print(f"{key} {side}: {k['kernels']} kernels, {k['device_us']} us (graph replay_ms {c['replay_ms']})")
            rows = sorted(k["by_name"].items(), key=lambda kv: -kv[1][1])
            for name, (n, us) in rows[:22 if side == "replay" else 8]:
                print(f"  {us / k['device_us'] * 100:5.1f}% {us:9.1f} us {n:4d}x {name[:150]}")
PY
stamp codec
python3 tools/bench_codec_ticks.py --cudnn-benchmark-limit 0 --rows 128 --ticks 1 --iters 3 \
    --out $OUT/codec_ticks_all.json > $OUT/codec_ticks_all.txt 2>&1
grep -E "Traceback|rror|replay_ms" $OUT/codec_ticks_all.txt | cut -c1-400
python3 - $OUT/codec_ticks.txt $OUT/codec_ticks_all.txt <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(f) if l.startswith('{"device"')][0] for f in sys.argv[1:])
print("build s:", a["build_s"], "vs", b["build_s"], "limits", a["cudnn_benchmark_limit"], b["cudnn_benchmark_limit"])
for key, ms in a["replay_ms"].items():
    if key in b["replay_ms"]:
        print(f"  {key}: {ms:.3f} vs {b['replay_ms'][key]:.3f} ms ({100 * (b['replay_ms'][key] / ms - 1):+.1f}%)")
PY
stamp all_algorithms
bash tools/device/next_one_gpu.sh
