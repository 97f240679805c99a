# Run 243 (session 69, call 1) = next_one_gpu_3.sh as written in session 68 (the wide GEMMs' bench and 1.7B step A/B)
# First in line on an H100 (after session 68; either card, ~9 minutes with the start; built in session 68, when no
# machine came in 23 asks): (1) the talker's GEMMs at 128 / 512 / 1,024 rows, cuBLAS (as the talker calls it,
# and with cuBLASLt preferred) against kernels/wide_linear.py at nine tile sizes, and the MLP's gate_up with SiLU(gate)
# * up in the GEMM's epilogue against cuBLAS + silu_mul (tools/bench_wide_linear.py, session 68); (2) with
# the tiles it picks (at 512 rows, where at most 0.97x cuBLAS), the 1.7B graph step at 128 and 512 rows, one
# process, M, W, M, W (W = M+wide-gated: those GEMMs through wide_linear from 128 rows, gate_up with its SiLU).
# Why: at 512 rows the predictor's GEMMs run at 328-545 TFLOP/s and the backbone's o_proj at 413 (run 222); the
# narrow outputs (predictor o_proj and down, N = 1,024; backbone o_proj and down, N = 2,048) make 32-64 tiles of
# 128 x 128 on 132 SMs. The predictor's GEMMs are 2.95 ms of the 12.4 ms 512-row step.
# Prediction: (1) at 512 rows the best wide tile 0.75-0.95x cuBLAS on the four N <= 2,048 weights, 0.95-1.10x on the
# wide ones (qkv, gate_up); cuBLASLt within +-5% of cuBLAS; the gated gate_up 0.80-0.95x cuBLAS + silu_mul; gated
# bits equal to the ungated kernel's through silu_mul. (2) W -3 to -7% at 512 rows, -1 to +3% at 128; graph = eager.
# Rule: W becomes a talker setting (off) if >= 2% faster at 512 rows in both pairs and not > 1% slower at 128; a
# stack A/B is then the next call, and on by default only after it.
source tools/device/setup.sh
stamp start
W="code_predictor.model.layers.self_attn.qkv_weight code_predictor.model.layers.self_attn.o_proj.weight"
W="$W code_predictor.model.layers.mlp.gate_up_weight code_predictor.model.layers.mlp.down_proj.weight"
W="$W model.layers.self_attn.qkv_weight model.layers.self_attn.o_proj.weight model.layers.mlp.gate_up_weight"
W="$W model.layers.mlp.down_proj.weight codec_head.weight code_predictor.lm_head.weight"
timeout 240 python3 tools/bench_wide_linear.py --rows 128 512 1024 --shapes $W --out $OUT/wide_linear.json \
    --tables-out $OUT/wide_tables.json > $OUT/wide_linear.txt 2>&1
grep -E "Traceback|rror|^tables|^\| [a-z_.]+ \| [0-9]+ \| (True|False)" $OUT/wide_linear.txt | cut -c1-200
grep -E "bits False" $OUT/wide_linear.txt | head -3
stamp wide
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
timeout 300 python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M+wide-gated,$M,$M+wide-gated" --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --wide-tiles $OUT/wide_tables.json --json $OUT/talker_wide.json \
    > $OUT/talker_wide.txt 2>&1
grep -E "Traceback|rror|graph vs eager|wide kernels vs|gated wide|batch [0-9]+:" $OUT/talker_wide.txt | cut -c1-250
stamp talker
