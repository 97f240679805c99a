# Run 151 (session 38, call 7; nvidia-h200, ~2 minutes, the session's last device seconds): which of the predictor
# GEMM's 75 calls a 1-row step are slow with fused_draws. Runs 147-150: nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN took
# 716-728 us a 1-row step without the setting in 4 of 5 captures (895 in run 147's), 894-913 with the indexed draws
# in 6 of 6, 803 with the talker's fused draw alone (run 150): in between, as if some calls were slow and others not.
# Here each build's 1-row replays are profiled with that kernel call by call (the mean of 20 replays each).
# Prediction: the slow calls are not spread evenly: they fall on particular passes of the 15 (e.g. the first, after
# the talker's draw, or those after an indexed draw) or on one layer of the 5. Nothing is decided on this run.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M+fused-draws" --batches 1 --max-len 512 \
    --check-steps 1 --iters 20 --profile-replays 1 --profile-kernel "2x1_v_bz_TNN" \
    --json $OUT/talker_profile.json 2>&1 \
    | grep -E "batch [0-9]+:|replays at|call by call|Error|error|unknown|Traceback" | cut -c1-1500
stamp done
