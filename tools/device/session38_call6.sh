# Run 150 (session 38, call 6; nvidia-h200, ~6 minutes): which half of fused_draws slows the predictor's GEMM at 1
# row. Run 149 captured each build twice in one process: the code predictor's nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN
# (75 calls a step, untouched by the setting) took 716 / 728 us a 1-row step without fused_draws and 904 / 903 with
# it: the setting's 1-row cost (5.02-5.06 -> 5.17-5.19 ms) is that GEMM, every time. Here, in one process: without,
# with, and each half with the bench's diagnostic split (+talker-draw-only: the talker's fused draw, the predictor's
# draws on gathered parameters; +indexed-draws-only: the predictor's draws reading at the slot, the talker's
# processors apart), each capture's 1-row replays profiled.
# Prediction: one half alone brings the slow GEMM (a guess: the indexed draws, 40%); 512 rows faster with either half.
# Nothing changes by this run (one order); a half that keeps the GEMM at the level without the setting and is >= 0.5%
# faster at 512 rows becomes a setting of its own, A/B'd in both orders next.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
F=$M+fused-draws
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$F,$F+talker-draw-only,$F+indexed-draws-only" \
    --batches 1,128,512 --max-len 512 --check-steps 2 --iters 50 --profile-replays 1 \
    --json $OUT/talker_profile.json 2>&1 \
    | grep -E "batch [0-9]+:|replays at|fused draws vs|Error|error|unknown|Traceback" | cut -c1-300
stamp done
