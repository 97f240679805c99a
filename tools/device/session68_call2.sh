# Run 244 (session 68, call 2): the talker's GEMMs at 128 / 512 / 1,024 rows, cuBLAS (as the talker calls it, and
# with cuBLASLt preferred) against kernels/wide_linear.py at nine tile sizes, and the MLP's gate_up with SiLU(gate) *
# up in the GEMM's epilogue against cuBLAS + silu_mul (tools/bench_wide_linear.py, built this session). Then the
# conv1s at 128x15 with both tilings (next_one_gpu_2.sh's second part).
# Why: at 512 rows the predictor's GEMMs run at 328-545 TFLOP/s and the backbone's o_proj at 413 (run 222); the
# narrow outputs (predictor o_proj and down, N = 1,024; backbone o_proj and down, N = 2,048) make 32-64 tiles of
# 128 x 128 on 132 SMs.
# Prediction: at 512 rows the best wide tile 0.75-0.95x cuBLAS on the four N <= 2,048 weights, 0.95-1.10x on the
# wide ones (qkv, gate_up); cuBLASLt within +-5% of cuBLAS; the gated gate_up 0.80-0.95x cuBLAS + silu_mul; at 128
# rows wide 0.8-1.2x. Rule: a talker-step A/B of the wide kernel (by shape, from 128 rows) is built next only if the
# predictor's four weights at 512 rows save >= 8 us a layer pass together (>= 0.6 ms a 512-row step).
source tools/device/setup.sh
stamp start
W="code_predictor.model.layers.self_attn.qkv_weight code_predictor.model.layers.self_attn.o_proj.weight"
W="$W code_predictor.model.layers.mlp.gate_up_weight code_predictor.model.layers.mlp.down_proj.weight"
W="$W model.layers.self_attn.qkv_weight model.layers.self_attn.o_proj.weight model.layers.mlp.gate_up_weight"
W="$W model.layers.mlp.down_proj.weight codec_head.weight code_predictor.lm_head.weight"
timeout 300 python3 tools/bench_wide_linear.py --rows 128 512 1024 --shapes $W --out $OUT/wide_linear.json \
    > $OUT/wide_linear.txt 2>&1
grep -E "Traceback|rror|^\| [a-z_.]+ \| [0-9]+ \| (True|False)" $OUT/wide_linear.txt | cut -c1-200
grep -E "bits False" $OUT/wide_linear.txt | head -3
stamp wide
timeout 150 python3 tools/bench_vocoder_convs.py --rows 128 --frames 15 --tiles 128x256x64w8s3 128x128x64w8s3 \
    --both-tilings --out $OUT/tilings_128x15.json > $OUT/tilings_128x15.txt 2>&1
grep -E "^ +(768|384) .* 3 triton|rror|Traceback" $OUT/tilings_128x15.txt | grep -E "snake|rror|Traceback" | cut -c1-200
stamp tilings
