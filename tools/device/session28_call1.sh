# Session 28, call 1 (nvidia-h200, ~4 minutes): where the talker step's time goes today.
# (The codec step's profile, next_one_gpu_2.sh, was dropped from this call before it ran, to keep device time for an
# A/B: run 107 has today's codec step profiled.)
# (1) The 1.7B talker step with today's talker kernels (fused+sampler+kv-write+add-norm; the last profile was run 86,
# session 23), at 128 and 512 rows, with the eager 512-row step's top kernels.
# Prediction: graph 512 rows 11.9-12.6 ms, 128 rows 6.9-7.5 ms (run 86: 12.227 / 7.172); decode attention the largest
# kernel at 30-36% of the eager CUDA time; graph = eager padded (every check passes).
# No rule: a measurement, to size the next talker change (q/k norm + RoPE + K/V write as one kernel) from the profile.
# (0) tools/gpu_sampler.py on the machine for 3 s idle (call 2 reads the stack's levels through it).
source tools/device/setup.sh
stamp start
which stdbuf nvidia-smi
python3 -c 'import sys, time; sys.path.insert(0, "tools"); from gpu_sampler import GpuSampler
t = time.time()
with GpuSampler() as g:
    time.sleep(3); print("gpu_sampler idle:", g.means(t, time.time()))'
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --profile --json $OUT/talker_step_today.json 2>&1 \
    | grep -v "it/s\]$" | cut -c1-300 | tail -80
stamp talker
