# One-GPU call (nvidia-h200, ~2 minutes), any time: the talker step's profile with the code predictor's first pass
# through the decode kernel, to pick the next talker change (no rule: a profile).
# Run 80 (session 22), before the change: eager 512-row step 17.57 ms of CUDA time, decode attention 5.22 ms (29.7%),
# GEMMs ~5.9, cuDNN flash 1.62 (the first pass; gone since), index kernels 1.20 (207 calls), adds 0.51, norms 0.97.
# Prediction: graph step at 512 rows 13.5-13.8 ms; decode attention ~33% of the eager step, index kernels ~8%.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler --batches 128,512,640 --max-len 512 \
    --check-steps 2 --profile --iters 20 --json $OUT/talker_step.json 2>&1 | tail -40
stamp talker
