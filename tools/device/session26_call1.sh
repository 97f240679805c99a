# Session 26 call 1: next_one_gpu.sh as it stood at the end of session 25, unchanged.
# Next one-GPU call (nvidia-h200, ~4 minutes): the codec step with today's defaults (every codec kernel on since
# session 25) at 128 rows and 1, 2, 4, 8 and 15 frames, with kernel profiles of the eager step at each length, and
# every check. Why: session 25 timed each of the RVQ, attention and transformer kernels alone at 15 frames (run 93),
# never all five together, so the GPU ceiling (talker 512-row step 12.23 ms, run 86, plus the codec's 128x15 step per
# frame + 4% for the ramp chunks) is not known for today's build; and at 512 streams the codec is still the busier
# stage (busy 0.95, runs 95 and 97): its profile says where the next codec work is.
# Prediction: 128x2 6.8-7.4 ms (run 93's checks run: 7.063), 128x15 34.5-36.0 ms (37.161 base; the three kernels
# alone -0.66, -0.96, -2.60%), so the ceiling ~1,850-1,870 audio-s/s; every check passes; in the 15-frame eager
# profile the vocoder's convs and the snake kernel take most of the CUDA time, the transformer < 15%.
# No rule: a measurement, to choose the next change.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --window-kernel --transformer-kernels --rvq-kernel --attention-kernel \
    --modes fused-cl,fused-cl+graph --batches 128 --chunks 1 2 4 8 15 --cudnn-benchmark --min-seconds 0.3 --profile \
    --out $OUT/codec_today.json 2>&1 | grep -v '"stages"' | cut -c1-400 | tail -80
stamp codec
