# Session 35 call 2 (run 133, nvidia-h200, ~5 minutes): what a codec replay launches with upsample_channels_last on
# (default since run 132; its census did not finish in run 132's call), the codec step's profile with today's
# defaults, and the 1.7B talker step after session 34's RoPE tables (64 ops fewer a step; not yet timed).
# Prediction: a 1x1 replay 240-245 kernels (run 131's 251, 3 fewer for the codec RoPE table, up to 8 layout
# conversions fewer), 128x15 265-270; graph 128x2 5.8-6.6 ms, 128x15 33.0-35.0 ms (run 130: 6.18 / 34.60; run 132's
# 128x15 A/B -1.2%); every check passes; the talker step 6.4-6.9 ms at 128 rows, 11.3-11.9 ms at 512 (run 131:
# 6.794 / 11.788), every talker check bitwise.
# No rule: measurements.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 --iters 3 --out $OUT/census.json 2>&1 \
    | grep -E '^\{"kernels"' | cut -c1-1500
stamp census
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel \
    --upsample-channels-last --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.3 --profile --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -60
stamp codec
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm+norm-rope-write \
    --batches 128,512 --max-len 512 --check-steps 2 --iters 30 --json $OUT/talker_step.json 2>&1 \
    | grep -E "graph vs eager|norm.rope|batch [0-9]+:|Error|error" | cut -c1-300 | head -40
stamp talker
