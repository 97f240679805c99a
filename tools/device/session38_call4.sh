# Run 148 (session 38, call 4; nvidia-h200, ~3 minutes): run 146's process again (off first, batches 1,128,512),
# with its 1-row graph replays profiled kernel by kernel. Run 146 had fused_draws 0.13-0.16 ms slower at 1 row in
# both orders (buckets 1,128,512); run 147 (buckets 1,512, another machine) had it 0.02 ms faster, its 1-row kernels
# showing the touched ones cheaper (the fused talker draw 6.1 us in place of ~25 us of small kernels) and untouched
# GEMMs 30 us dearer. Question: when the 1-row step is slower with it, is the time in the touched kernels, in
# untouched ones, or between kernels (wall minus kernel sum)?
# Prediction: if 1 row is slower again, the difference is in untouched kernels (GEMMs) or between kernels, not in
# the draws; nothing is decided on this run (run 146 decided: fused_draws stays off).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M+fused-draws" --batches 1,128,512 --max-len 512 \
    --check-steps 2 --iters 50 --profile-replays 1 --json $OUT/talker_profile.json 2>&1 \
    | grep -E "graph vs eager|fused draws vs|batch [0-9]+:|replays at|Error|error|unknown|Traceback" | cut -c1-300
stamp done
