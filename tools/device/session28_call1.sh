# Session 28, call 1 (nvidia-h200, ~5 minutes): the talker step with today's kernels, profiled, and the q/k norms +
# RoPE + K/V cache write as one kernel (`norm_rope_write_kernel`, kernels/kv_write.norm_rope_write_kv) against it.
# (The codec step's profile, next_one_gpu_2.sh, was dropped from this call before it ran: run 107 has it.)
# Why: today's fused attention runs, per layer and pass, `rms_norm_rope` on q, on k, then `write_kv`: three small
# kernels (run 86: 103 `_write_kv_kernel` launches 0.23 ms of a 512-row step's 12.06 ms of CUDA time); one kernel does
# all three: 206 launches fewer per step (28 talker layers + 5 predictor layers x 15 passes, 2 each).
# Prediction: today's graph step 512 rows 11.9-12.6 ms, 128 rows 6.9-7.5 ms (run 86: 12.227 / 7.172), decode attention
# the largest kernel at 30-36% of the eager CUDA time; with the one kernel 512 rows -2 to -5%, 128 rows -3 to -6%; the
# kernel's step equal to the three kernels' to the bit (codes, both caches, hidden), graph = eager padded.
# Rule, written before the run: `norm_rope_write_kernel` turns on by default (talker setting) if every check of its
# mode passes (bitwise against the three kernels; graph = eager padded) and its 512-row graph step is >= 2% shorter than
# today's in this run, and its 128-row step is not longer.
# (0) tools/gpu_sampler.py on the machine for 3 s idle (call 2 reads the stack's levels through it).
source tools/device/setup.sh
stamp start
which stdbuf nvidia-smi
python3 -c 'import sys, time; sys.path.insert(0, "tools"); from gpu_sampler import GpuSampler
t = time.time()
with GpuSampler() as g:
    time.sleep(3); print("gpu_sampler idle:", g.means(t, time.time()))'
python3 tools/bench_talker_step.py --models 1.7B \
    --modes fused+sampler+kv-write+add-norm,fused+sampler+kv-write+add-norm+norm-rope-write --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --profile --json $OUT/talker_step.json 2>&1 \
    | grep -E "graph vs eager|norm.rope|batch [0-9]+:|Error|error|^ +[0-9.]+ ms" | cut -c1-300 | head -120
stamp talker
