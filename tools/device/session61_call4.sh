# Run 222 (session 61, call 4) = the 1.7B step's GEMMs by weight at 128 and 512 rows, where they run on cuBLAS
# (gemm_table now names F.linear's calls too, with TFLOP/s by the rows' multiply-adds).
# Why: at 512 streams under MPS the card is full (runs 219-221), so more throughput needs less GPU time per frame; at
# 512 rows the GEMMs are ~45% of the step (run 178, H200) at ~52% of the bf16 peak on average. Which weights are slow?
# Prediction (an H100): the step 6.5-7.5 ms at 128 rows and 12.3-13.0 at 512 (runs 195-196: 12.61 at 512); at 512
# rows the backbone's gate_up and down at >= 550 TFLOP/s, the code predictor's o_proj and down (1,024 features, few
# output tiles) at <= 350; the GEMMs 5.2-6.5 ms of the 512-row step. No rule: it decides nothing.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 128,512 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 128,512 --profile-kernel "nvjet|gemm|cutlass|_skinny_linear" \
    --json $OUT/talker_gemms.json > $OUT/gemms.txt 2>&1
grep -E "Traceback|rror|batch [0-9]+:|replays at|no table|^  (128|512) rows: " $OUT/gemms.txt | cut -c1-300
stamp gemms
