# Session 28, call 1 (nvidia-h200, ~6 minutes): where one H200's time goes today, both steps on one machine.
# (1) next_one_gpu_2.sh unchanged: the codec step with all six codec kernel flags at 128 rows and 1-15 frames, profiled.
# Prediction: graph 128x2 6.8-7.6 ms, 128x15 34.8-36.3 ms; in the 15-frame profile `_snakebeta_cl_kernel` 17
# launches at 9-12% of the CUDA time, `_bias_residual_cl_kernel` 12 at 12-15%; every check passes.
# (2) The 1.7B talker step with today's talker kernels (fused+sampler+kv-write+add-norm; the last profile was run 86,
# session 23), at 128 and 512 rows, with the eager 512-row step's top kernels.
# Prediction: graph 512 rows 11.9-12.6 ms, 128 rows 6.9-7.5 ms (run 86: 12.227 / 7.172); decode attention the largest
# kernel at 30-36% of the eager CUDA time; graph = eager padded (every check passes).
# No rule: measurements, to choose the next change from the two profiles.
# (0) tools/gpu_sampler.py on the machine for 3 s idle (call 2 reads the stack's levels through it).
source tools/device/setup.sh
stamp start
which stdbuf nvidia-smi
python3 -c 'import sys, time; sys.path.insert(0, "tools"); from gpu_sampler import GpuSampler
t = time.time()
with GpuSampler() as g:
    time.sleep(3); print("gpu_sampler idle:", g.means(t, time.time()))'
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --residual-snake-kernel --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark \
    --min-seconds 0.3 --profile --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm --batches 128,512 \
    --max-len 512 --check-steps 2 --iters 30 --profile --json $OUT/talker_step_today.json 2>&1 \
    | grep -v "it/s\]$" | cut -c1-300 | tail -80
stamp talker
