# Run 149 (session 38, call 5; nvidia-h200, ~5 minutes): is fused_draws' 1-row cost its own or chance? Run 148
# reproduced run 146's 1-row cost (5.024 -> 5.186 ms) and put it all in one kernel the setting does not touch: the
# code predictor's GEMM nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN (75 calls a step), 717 us a step without the setting,
# 906 us with it; in run 147 it was slow in both (895 / 912 us); run 144 saw the same kernel apart by trees (819 /
# 920 us). Here each build is captured twice in one process (off, off, on, on; buckets 1,128,512), every capture's
# 1-row replays profiled.
# Prediction: if the slow GEMM is chance (where the graph's buffers land), the two captures of one build differ as
# often as the builds do; if the setting causes it, both "off" captures are fast (~720 us) and both "on" slow (~900).
# Nothing is decided on this run (run 146 decided: fused_draws stays off).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M,$M+fused-draws,$M+fused-draws" --batches 1,128,512 \
    --max-len 512 --check-steps 2 --iters 50 --profile-replays 1 --json $OUT/talker_profile.json 2>&1 \
    | grep -E "batch [0-9]+:|replays at|Error|error|unknown|Traceback" | cut -c1-300
stamp done
