# Run 147 (session 38, call 3; nvidia-h200, ~3 minutes): where fused_draws' 1-row cost is. Run 146 A/B'd the setting
# in one process, both orders: 1 row +3.1 / +2.5% slower with it (0.13-0.16 ms), 128 rows -0.8 / -1.0%, 512 rows
# -1.4 / -1.1%, every check bitwise; so by its rule it stays off. Here both modes' graph replays are profiled kernel
# by kernel (50 replays) at 1 and 512 rows in one process.
# Prediction: the 1-row wall difference is not in the touched kernels' own time (run 144: the fused talker draw
# < 12 us, the 15 indexed draws 1.8 us each, as without it); if the kernel sums differ by < 30 us while the walls
# differ by > 100 us, the cost is in the chain (waits between dependent kernels), not in a slower kernel.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M+fused-draws" --batches 1,512 --max-len 512 \
    --check-steps 2 --iters 50 --profile-replays 1,512 --json $OUT/talker_profile.json 2>&1 \
    | grep -E "graph vs eager|fused draws vs|batch [0-9]+:|replays at|Error|error|unknown|Traceback" | cut -c1-300
stamp done
