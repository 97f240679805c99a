# Run 224 (session 62, call 1) = (1) the fp8 K/V cache (talker kv_cache_dtype fp8, built this session) against
# today's bf16 cache: the 1.7B graph step at 16 / 128 / 512 rows, one process, M, F, M, F (F = M+fp8-kv), with the
# bench's checks (graph = eager padded with the fp8 cache; the write kernels' fp8 bits against omni/fp8.to_fp8 on the
# hardware's conversion; codes of the fp8 cache against the bf16 cache's); (2) the codec's graphs by kernel with
# today's defaults, a 128x15 and a 128x2 replay (bench_codec_ticks --kernels; last profiled in run 137, session 36).
# Why: at 512 rows the backbone's decode attention is ~3.1-4.2 of the step's 12.1 ms on an H100 at 86% of the
# bandwidth (runs 222-223): only fewer bytes a position move it. Under MPS at 512 streams the codec is ~0.54 of the
# GPU's time (run 219) and nothing says which of its kernels that is today.
# Prediction: (1) F against M -8 to -14% at 512 rows, -3 to -8% at 128, -0.5 to -3% at 16; graph = eager; the fp8
# writes equal to_fp8's bits; codes of F against the bf16 cache's 70-100% equal over the check's steps (random
# weights). (2) the convs (cuDNN kernels) >= 55% of the 128x15 replay's device time, SnakeBeta kernels 10-20%, the
# transformer's kernels < 10%.
# Rule: F stays an option (not the reference's bits); if F is >= 5% faster at 512 rows, the stack at 512 streams with
# OMNI_TALKER_KV_CACHE_DTYPE=fp8 against without is the next call.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
F=$M+fp8-kv
talker_order 1.7B 16,128,512 "$M,$F,$M,$F" ab --check-steps 6
python3 - "$OUT/talker_ab.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["models"]["1.7B"]
for key, value in m.items():
    if "fp8" in key or key.startswith("check_"):
        print(key[-60:], value)
modes = list(m["modes"].items())
for i, (name, mode) in enumerate(modes):
    print(i, "fp8" if "fp8-kv" in name else "bf16", mode.get("reserved_gib"), {b: s["graph_ms"] for b, s in mode["steps"].items()})
PY
stamp talker
python3 tools/bench_codec_ticks.py --kernels 128x15 128x2 --rows 128 --ticks 1 --iters 3 \
    --out $OUT/codec_ticks.json > $OUT/codec_ticks.txt 2>&1
grep -E "Traceback|rror" $OUT/codec_ticks.txt | cut -c1-400
python3 - $OUT/codec_ticks.txt <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith('{"device"'):
        head = json.loads(line)
        print("build", head["build_s"], "s; replay ms", {k: v for k, v in head["replay_ms"].items() if k.startswith("128x") or k.startswith("64x")})
    if not line.startswith('{"kernels"'):
        continue
    for key, c in json.loads(line)["kernels"].items():
        k = c["replay"]
        print(f"{key} replay: {k['kernels']} kernels, {k['device_us']} us (graph replay_ms {c['replay_ms']})")
        for name, (n, us) in sorted(k["by_name"].items(), key=lambda kv: -kv[1][1])[:20]:
            print(f"  {us / k['device_us'] * 100:5.1f}% {us:9.1f} us {n:4d}x {name[:140]}")
PY
stamp codec
