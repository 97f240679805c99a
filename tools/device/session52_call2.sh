# Run 187 (session 52, call 2) = next_one_gpu_2.sh as of 21a4889.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~6 minutes), after next_one_gpu.sh: the step's GEMM launches swept in
# place with 128-feature blocks (tools/sweep_gemm_launch.py --candidates), every weight shape at 16 and 32 rows, two
# rounds, with 64x128 alongside (today's on [1024, 2048], untried on the wide weights at 32 rows).
# Why: run 184 found the launch with the fewest programs best on [1024, 2048] (64x128, 16 programs: -1.44% of the
# 16-row step; more programs +1.2 to +5.6%), and run 185 made it the default from 9 rows. On the wide weights the
# widest block tried (runs 182-184) had 64 features: the backbone's gate_up [12288, 2048] ran 192 programs, the
# predictor's [6144, 1024] 96 and qkv [4096, 1024] 128. 128-feature blocks halve that.
# Prediction: at 16 rows a 128-feature launch beats its default by >= 0.5% in both rounds on at least one of the
# N >= 4096 shapes; on N <= 2048 none does. Decides nothing alone: a change goes through a bench_talker_step A/B.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 -c "import sys; sys.path.insert(0, 'tools'); import sweep_gemm_launch as s; assert s.DEFAULTS == '$M'"
timeout 520 python3 tools/sweep_gemm_launch.py --rows 16,32 --candidates 128x64s4k1,128x128s3k1,64x128s4k1 \
    --json $OUT/sweep.json 2>&1 | grep -E "^rows|Error|error|Traceback" | cut -c1-400
stamp sweep
