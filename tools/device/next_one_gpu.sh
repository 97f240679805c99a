# One-GPU call for an H200 (`nvidia-h200`; ~9 minutes with the start; an H100's numbers are not comparable with the
# record's H200 rows, so on an H100 it runs the H100 card further down instead): the state card with today's one-GPU
# layout, `omni serve --mps` (session 60).
# (1) The one-GPU stack under MPS (`bench_stack --mps`: the talker queues its steps ahead beside the codec), 1.7B,
# 1 / 16 / 32 / 128 / 512 streams opened at once, 6 rounds; (2) the same stack without MPS at 16 and 512 streams, the
# A/B of runs 216-217 on an H200 (run 179 on an H200 without MPS: 20.6 / 208.8 / 346.5 at 1 / 16 / 32; runs 156-157:
# 1,517.8 and 1,392.2 at 512); (3) the 1.7B step's GEMMs by weight at 16 rows (gemm_table).
# Prediction: under MPS against without, +15 to +30% at 16 streams and +5 to +15% at 512 (runs 216-217 on H100s: +27%,
# +13%); under MPS 512 streams 1,600-1,750 audio-s/s, no gapped request; TTFA p99 at 128 streams 170-240 ms; 1 stream
# 20-24 audio-s/s with TTFA p99 under 90 ms. No rule: it decides nothing (runs 216-217 made the layout the default).
# On an H100 (every call from session 54 to 62 got one) it runs the H100 card below instead: (a) the codec's graphs
# by kernel with today's defaults, a 128x15 and a 128x4 replay (bench_codec_ticks --kernels: each replay's dearest
# kernels; last profiled in run 137; run 224's try ran out of its call while the codec's graphs were built), since
# under MPS at 512 streams the codec's share of the full card bounds the stack (runs 219, 225); (b) the 512-row
# talker step's decode attention call by call: run 222 left ~1.1 ms of its 5.3 ms unaccounted for by the isolated
# calls (run 223: 112 us a backbone call at 2.89 TB/s). Prediction: (a) the convs (cuDNN kernels) >= 55% of the
# 128x15 replay's device time, SnakeBeta kernels 10-20%, the transformer's kernels < 10%; (b) the backbone's calls
# 120-135 us each at ~172 positions, the predictor's 8-16 us; if the backbone's calls sum past 4.0 ms, they run
# slower in the step than alone (trace next: what runs beside them); otherwise the predictor's do.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    python3 tools/bench_codec_ticks.py --kernels 128x15 128x4 --rows 128 --ticks 1 --iters 3 \
        --out $OUT/codec_ticks.json > $OUT/codec_ticks.txt 2>&1
    grep -E "Traceback|rror|^\||replay:" $OUT/codec_ticks.txt | cut -c1-200 | head -60
    stamp codec
    python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 512 --max-len 512 --check-steps 2 \
        --iters 20 --profile-replays 512 --profile-kernel decode_attention --json $OUT/attention_calls.json \
        > $OUT/attention.txt 2>&1
    grep -E "Traceback|rror|batch [0-9]+:|replays at" $OUT/attention.txt | cut -c1-300
    python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['models']['1.7B']; p=list(p['modes'].values())[0]
c=p['replay_profile']['512']['calls_exposed_us']; print(len(c), 'calls; first 80:', c[:80]); print('last 28:', c[-28:])" \
        $OUT/attention_calls.json
    stamp attention
    exit 0
fi
$S --mps --concurrency 1 16 32 128 512 --level-timeout 150 --out /tmp/stack; save stack
$S --concurrency 16 512 --level-timeout 150 --out /tmp/nomps; save nomps
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror|replays at|^  16 rows: " $OUT/calls.txt | cut -c1-300  # per weight (gemm_table); calls in the JSON
stamp calls
