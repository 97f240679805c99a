# Run 178 (session 50, call 1) = next_one_gpu_2.sh: (nvidia-h200, ~3 minutes) where a 1-, 16-, 32- and 512-row 1.7B step's time goes with
# today's defaults, kernel by kernel from graph replays, each kernel's time counted past the kernels before it
# (bench_talker_step --profile-replays: `exposed`, summing to `busy_us`).
# Why: with programmatic launch (on in steps of at most 64 rows) a kernel's span counts its wait for the one ahead:
# run 177's spans summed to 125-160% of the wall time (an H100), so its split said little. Run 168 (an H200, before
# programmatic launch) is the last split without overlap. The next change should come from this one.
# Prediction: busy_us 90-100% of the profiled wall time at every row count; at 512 rows (no programmatic launch) the
# exposed split within 2% of the spans' (the eager step's split in docs/benchmarks.md "At a glance": decode attention
# 34%, the GEMMs 45%); at 16 rows the exposed GEMM kernels 55-65% and the draws 4-5% (run 168: 59.8% and 210 us of
# 4,430). Decides nothing.
source tools/device/setup.sh
stamp start
# Today's defaults: since run 173 (session 45) with programmatic launch in steps of at most 64 rows.
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 1,16,32,512 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 1,16,32,512 --json $OUT/talker_profile.json > $OUT/profile.txt 2>&1
grep -E "Traceback|rror" $OUT/profile.txt | cut -c1-300
grep -E "replays at|exposed at|batch [0-9]+:" $OUT/profile.txt | cut -c1-400
stamp profile
