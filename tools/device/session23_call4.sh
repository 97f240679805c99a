# One-GPU call (nvidia-h200, ~4 minutes), any time: two talker-step changes built in session 22 and off, in the
# talker step benchmark against today's step (with its profile): the K/V cache write as one Triton copy per layer
# (`kv_write_kernel`, kernels/kv_write.py) and each residual add fused into the RMSNorm after it (`fused_add_norm`,
# kernels/transformer_fused.add_rms_norm), alone and together.
# Run 80 (session 22): in an eager 512-row 1.7B step (17.57 ms of CUDA time) 207 `index_elementwise_kernel` calls took
# 1.20 ms (6.9%): the K and V puts of the talker's 28 layers and the code predictor's 5 layers x 15 passes, ~5.8 us
# each for ~1 MB. Run 82: graph step 13.596 ms at 512 rows, 8.375 at 128.
# Prediction: kv write kernel vs index put equal bit for bit (codes, caches, hidden); graph = eager padded; the graph
# step at 512 rows 13.6 -> 12.8-13.2 ms (103 copies of ~2 us instead of 206 puts of ~5.8), at 128 rows -0.2-0.5 ms;
# in the new profile decode attention ~33% and no index_elementwise kernel among the top.
# Run 80's profile also had 222 residual adds (0.51 ms) and 222 RMSNorms (0.47 ms); fused, the norms read the sum they
# write: ~206 kernels fewer. Prediction for add-norm: bit-for-bit equal to the layer-by-layer forward (codes, caches,
# hidden), graph = eager padded, 512 rows -0.3-0.5 ms; both together -1.0-1.4 ms.
# Rule, written before the run: each of `kv_write_kernel` and `fused_add_norm` turns on by default (talker settings;
# TalkerRunner and fuse_talker_kernels stay off unless asked) if every check of its mode passes and its 512-row graph
# step is faster than fused+sampler's in this run by >= 3% (kv_write_kernel) or >= 2% (fused_add_norm: fewer
# kernels, the same bits). Each is judged alone; the combined mode is for the record.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B \
    --modes fused+sampler,fused+sampler+kv-write,fused+sampler+add-norm,fused+sampler+kv-write+add-norm --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --profile --json $OUT/talker_step_changes.json 2>&1 \
    | grep -E "graph vs eager|vs_sdpa|kv write|add.norm|batch [0-9]+:|runner|Error|error|^ +[0-9.]+ ms" | head -120
stamp talker
