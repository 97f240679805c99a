# Run 243 (session 68, call 1): the first part of next_one_gpu_3.sh alone, at 128 and 512 rows (the session's device
# time was down to ~360 s after eleven asks that got no machine): the talker's GEMMs, cuBLAS and cuBLASLt against
# kernels/wide_linear.py at nine tile sizes, and the gated gate_up against cuBLAS + silu_mul. Prediction and rule as
# in next_one_gpu_3.sh's header (this part: at 512 rows the best tile 0.75-0.95x cuBLAS on the N <= 2,048 weights).
source tools/device/setup.sh
stamp start
W="code_predictor.model.layers.self_attn.qkv_weight code_predictor.model.layers.self_attn.o_proj.weight"
W="$W code_predictor.model.layers.mlp.gate_up_weight code_predictor.model.layers.mlp.down_proj.weight"
W="$W model.layers.self_attn.qkv_weight model.layers.self_attn.o_proj.weight model.layers.mlp.gate_up_weight"
W="$W model.layers.mlp.down_proj.weight"
timeout 200 python3 tools/bench_wide_linear.py --rows 128 512 --shapes $W --out $OUT/wide_linear.json \
    --tables-out $OUT/wide_tables.json > $OUT/wide_linear.txt 2>&1
grep -E "Traceback|rror|^tables|^\| [a-z_.]+ \| [0-9]+ \| (True|False)" $OUT/wide_linear.txt | cut -c1-200
grep -E "bits False" $OUT/wide_linear.txt | head -3
stamp wide
