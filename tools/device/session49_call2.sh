# Run 177 (session 49, call 2, the warm H100 of run 176 with 310 s of device time left): next_one_gpu_2.sh's last part,
# where a 1-, 16- and 32-row 1.7B step's time goes with today's defaults (bench_talker_step --profile-replays).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 1,16,32 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 1,16,32 --json $OUT/talker_profile.json > $OUT/profile.txt 2>&1
grep -E "Traceback|rror" $OUT/profile.txt | cut -c1-300
grep -E "replays at|batch [0-9]+:" $OUT/profile.txt | cut -c1-220
stamp profile
