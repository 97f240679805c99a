# Session 35 call 3 (run 134, nvidia-h200, ~3 minutes): the 1.7B talker step after session 34's RoPE tables (64 ops
# fewer a step; on the default path, bitwise on the CPU, not yet timed: run 133 spent its time on the census and
# timed out in the codec profile).
# Prediction: 6.4-6.9 ms at 128 rows, 11.3-11.9 ms at 512 (run 131: 6.794 / 11.788), every talker check bitwise.
# No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm+norm-rope-write \
    --batches 128,512 --max-len 512 --check-steps 2 --iters 30 --json $OUT/talker_step.json 2>&1 \
    | grep -E "graph vs eager|norm.rope|batch [0-9]+:|Error|error" | cut -c1-300 | head -40
stamp talker
