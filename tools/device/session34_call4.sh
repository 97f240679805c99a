# Session 34, call 4 (run 131). One-GPU call (nvidia-h200, ~5 minutes): both halves of the back-to-back ceiling
# measured again on one machine with today's defaults: what a codec replay launches (history_swap_kernel on since run
# 128) and the 1.7B talker step at 128 and 512 rows.
# Why: docs/benchmarks.md's ceiling (≈ 1,910 audio-s/s) takes run 130's codec step and run 109's talker step (session
# 28, another machine); run 128's census was counted on the CPU only (272 - 21 at 1x1).
# Prediction: 1x1 replay 251 kernels, 128x15 276; a 1x1 replay 0.80-0.95 ms at capture (run 127: 0.877 with 272);
# talker graph step 512 rows 11.6-12.4 ms, 128 rows 6.7-7.2 ms (run 109: 11.864 / 6.846); every talker check passes.
# No rule: a measurement.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 --iters 3 --out $OUT/census.json 2>&1 \
    | grep -E '^\{"kernels"|"check"|^\|' | cut -c1-1500
stamp census
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler+kv-write+add-norm+norm-rope-write \
    --batches 128,512 --max-len 512 --check-steps 2 --iters 30 --json $OUT/talker_step.json 2>&1 \
    | grep -E "graph vs eager|norm.rope|batch [0-9]+:|Error|error|^ +[0-9.]+ ms" | cut -c1-300 | head -60
stamp talker
