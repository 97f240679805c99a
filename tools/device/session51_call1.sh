# Run 181 (session 51, call 1) = next_one_gpu.sh as of bc7d92e.
# One-GPU call (nvidia-h200, ~3 minutes), any time: the 1.7B step's GEMM launches one by one at 1 and 16 rows, each
# launch's exposed time (bench_talker_step --profile-kernel, `calls_exposed_us`), to put against its weight's bytes.
# Why: run 178 put the GEMMs at 58-63% of a 1-32 row step (16 rows: 445 dot-kernel launches, 2,763 us, ~1.9 TB/s over
# ~5.3 GB of weights), and run 180's L2 prefetch before the wait gave the GEMMs nothing (+1.3%) while slowing the
# kernels ahead. Which weights read slowly decides the next change: the backbone's 112 launches (2.8 GB) or the
# predictor's ~330 (15 passes of ~0.16 GB).
# Prediction: at 16 rows the backbone's GEMMs >= 3 TB/s by their bytes and exposed time, the predictor's <= 1.5 TB/s;
# at 1 row both nearer (the row kernel: ~2.4 TB/s in run 154). Each launch's weight comes with it (`gemm_weights`: a
# step runs the predictor's 15 passes, the text projection, the backbone's layers, the codec head). Decides nothing
# alone.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
python3 tools/bench_talker_step.py --models 1.7B --modes "$M" --batches 1,16 --max-len 512 --check-steps 2 \
    --iters 20 --profile-replays 1,16 --profile-kernel skinny_linear --json $OUT/talker_calls.json > $OUT/calls.txt 2>&1
grep -E "Traceback|rror" $OUT/calls.txt | cut -c1-300
grep -E "replays at|batch [0-9]+:" $OUT/calls.txt | cut -c1-300  # the calls and their weights: in talker_calls.json
stamp calls
