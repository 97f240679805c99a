# One-GPU call (nvidia-h200, ~3 minutes): the code predictor's 2-position first pass through the decode kernel
# (one kernel row per position; talker setting `short_pass_kernel`) against SDPA, in the talker step benchmark.
# Run 80 (session 22): in an eager 512-row 1.7B step (17.57 ms of CUDA time) cuDNN's flash attention took 1.62 ms
# over 5 calls (9.2%): the predictor's 5 layers, each a 2-query pass over a 16-position cache, tiled 64x128.
# Session 6 tried plain fp32 math there (run 25): the upcasts and copies ate the gain. The decode kernel's
# LAUNCH_SHORT takes a 16-position cache at ~9 us a call for 512 rows (run 26); this pass is 1,024 such rows.
# Prediction: the checks pass (graph = eager padded; fp32 kernel vs SDPA codes all equal); the graph step at 512 rows
# 15.1 -> 13.5-14.0 ms, at 128 rows 8.7 -> 8.3-8.6.
# Rule, written before the run: `short_pass_kernel` stays on by default (TalkerConfig, TalkerRunner) if every check
# passes and the 512-row graph step is >= 5% faster than fused+sampler+sdpa-short in this run; otherwise it goes off.
# A stack A/B (OMNI_TALKER_SHORT_PASS_KERNEL=0 against the default) is for the next session.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+sdpa-short,fused+sampler --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --json $OUT/talker_short_pass.json 2>&1 \
    | grep -E "graph vs eager|vs_sdpa|batch [0-9]+:|runner|Error|error" | head -40
stamp talker
