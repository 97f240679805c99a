# Next one-GPU call (nvidia-h200, ~7 minutes): the channels-last SnakeBeta with sin.approx (the codec's `fast_sine`,
# OMNI_CODEC_FAST_SINE=1; run 77 set it as OMNI_FAST_SIN) in the service, and bench_codec's checks with it. Run
# next_one_gpu_2.sh right after, on the same machine: it holds the default's stacks that this call's are read against.
# Run 77 (session 21, tools/bench_snakebeta.py): one 128x15 step's 29 SnakeBeta launches 11.27 ms with libdevice's
# sinf (1.88 TB/s) against 5.95 ms with sin.approx (3.56 TB/s), max relative error against the fp32 definition
# 3.92e-3 and 3.95e-3 (speech-scale inputs); the service's codec step (fused-cl+graph, 128 rows) 45.82 -> 39.88 ms at
# 15 frames (-13%), 12.12 -> 11.69 at 2. bench_codec's channels-last kernel and decoder checks passed with it; its two
# graph-vs-eager checks could not run (they handed the graphs CUDA codes, which decode_step has refused since
# session 8's numpy staging; fixed in session 21, not yet run on a GPU). Session 21's rule (fast sine on by default if
# the step is >= 5% faster and every check passes) is met but for those two checks, hence the first command here.
# Prediction: every check passes (graph = eager bitwise at a full bucket, <= 5e-2 padded and split); in the stack the
# codec's tick at 512 streams 69-73 ms -> ~63 ms and at 800 ~80 -> ~72 ms (128-row ticks), audio-s/s at 512
# +3-8% over next_one_gpu_2.sh's default stack (1,117.4 with today's default in run 73; the talker, busy 0.91, is
# then the limit), at 800 no more requests with a gap than the default's (3% and 6%, runs 73 and 75).
# Rule, written before the runs: the codec's `fast_sine` turns on by default (16-bit outputs on a GPU) if every check
# passes, 512 streams play with no gap at >= 102% of the same machine's default audio-s/s, and at 800 the gapped share
# is no more than the default's + 3 points.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --modes fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --min-seconds 0.3 --out $OUT/codec_fast_sin.json 2>&1 | grep -E '^\{"check|^\{"error|^fused'
stamp checks
OMNI_CODEC_FAST_SINE=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/FS; save FS
