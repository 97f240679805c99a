# One-GPU call (nvidia-h200, ~3 minutes), any time: the K/V cache write as one Triton copy per layer
# (`kv_write_kernel`, kernels/kv_write.py, off) against the index puts, in the talker step benchmark, with the
# profile of today's step (the code predictor's first pass through the decode kernel since session 22).
# Run 80 (session 22): in an eager 512-row 1.7B step (17.57 ms of CUDA time) 207 `index_elementwise_kernel` calls took
# 1.20 ms (6.9%): the K and V puts of the talker's 28 layers and the code predictor's 5 layers x 15 passes, ~5.8 us
# each for ~1 MB. Run 82: graph step 13.596 ms at 512 rows, 8.375 at 128.
# Prediction: kv write kernel vs index put equal bit for bit (codes, caches, hidden); graph = eager padded; the graph
# step at 512 rows 13.6 -> 12.8-13.2 ms (103 copies of ~2 us instead of 206 puts of ~5.8), at 128 rows -0.2-0.5 ms;
# in the new profile decode attention ~33% and no index_elementwise kernel among the top.
# Rule, written before the run: `kv_write_kernel` turns on by default (talker setting; TalkerRunner stays off unless
# asked) if every check passes and the 512-row graph step is >= 3% faster than fused+sampler in this run.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler,fused+sampler+kv-write --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --profile --json $OUT/talker_kv_write.json 2>&1 \
    | grep -E "graph vs eager|vs_sdpa|kv write|batch [0-9]+:|runner|Error|error|^ +[0-9.]+ ms" | head -60
stamp talker
