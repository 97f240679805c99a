# Run 228 (session 63, call 2) = cuDNN's autotuner trying every algorithm (torch.backends.cudnn.benchmark_limit 0)
# against torch's default (10 per shape) for the codec's graphs: four processes, limits 10, 0, 10, 0, each building
# the service's codec graphs for buckets 1, 16, 128 (OMNI_CODEC_GRAPH_BATCH_BUCKETS) and chunk lengths 1/4/8/15,
# printing its build seconds, every graph's replay ms, and the 128x15 and 128x4 replays by kernel.
# Why: run 227 (an H100) put the convs at ~60% of the 128x15 replay (34.7 ms), and cuDNN's choices include sm80
# kernels (sm80_xmma 14.4%, cutlass sm80 15.1%, an sm80 fort_native 4.4%) on sm90 hardware: with every algorithm
# timed, faster sm90 ones may win. The codec's share of the card bounds the 512-stream MPS stack (runs 219, 225).
# Prediction: with limit 0 the 128x15 replay -2 to -6%, 128x4 0 to -5%, the 1-row graphs within +-2%; the build
# 1.5-4x longer. Rule: if 128x15 is >= 2% shorter in both pairs and no graph is > 2% longer in both pairs, the codec
# service sets benchmark_limit 0 by default (a codec setting), with its start-up cost stated.
source tools/device/setup.sh
stamp start
export OMNI_CODEC_GRAPH_BATCH_BUCKETS=1,16,128
i=0
for L in 10 0 10 0; do
    i=$((i + 1))
    timeout 200 python3 tools/bench_codec_ticks.py --cudnn-benchmark-limit $L --kernels 128x15 128x4 --rows 128 \
        --ticks 1 --iters 3 --side-buckets 1 --out $OUT/ticks_$i.json > $OUT/limit_${i}_$L.txt 2>&1
    head -1 $OUT/limit_${i}_$L.txt | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); \
print('limit', d['cudnn_benchmark_limit'], 'build_s', d['build_s'], d['replay_ms'])"
    grep -E "Traceback|rror|replay:" $OUT/limit_${i}_$L.txt | cut -c1-200
    stamp "limit $L ($i)"
    [ $(($(date +%s) - T0)) -gt 420 ] && break
done
grep -h -A10 "128x15 replay:" $OUT/limit_2_0.txt | cut -c1-200
