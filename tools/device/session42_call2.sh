# Session 42 call 2 (run 168) = next_one_gpu_2.sh as it stood at d3cee8d.
# One-GPU call (nvidia-h200, ~4 minutes), any time: where a 1-, 16- and 32-row 1.7B step's time goes with session 41's
# defaults, kernel by kernel from graph replays (bench_talker_step --profile-replays).
# Why: session 41 moved every GEMM of a step of up to 32 rows onto our kernels (the talker's qkv, gate_up and codec
# head past 16 rows excepted), with launches by shape; run 154's split (GEMMs 2,134 of 3,571 us of kernels at 1 row)
# is from before sessions 40-41. The next change should come from the new split, not from the old one.
# Prediction: at 1 row the GEMMs 50-60% of the kernels' time, the rest mostly attention, norms and the draws; at 16
# and 32 rows the GEMMs 55-65%. Decides nothing; a profile for the docs and the next change.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 1,16,32 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 1,16,32 --json $OUT/talker_profile.json > $OUT/profile.txt 2>&1
grep -E "Traceback|rror" $OUT/profile.txt | cut -c1-300
grep -vE "it/s\]$" $OUT/profile.txt | tail -80 | cut -c1-220
stamp profile
