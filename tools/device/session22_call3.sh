# One-GPU call (nvidia-h200, ~4 minutes), any time: where a full GPU's time goes with the fast sine, both steps, to
# pick the next speed change (no rule: a profile).
# The last talker-step profile is run 61's (session 16: 15.19 ms at 512 rows, decode attention 27.5% of the eager
# step); run 75 profiled the codec's fused-cl step before the fast sine (SnakeBeta 27.2%, convolutions ~40%, the
# fused bias + residual 7.2%), and run 77 timed the fast sine (128x15 step 45.82 -> 39.88 ms).
# Prediction: codec fused-cl+graph 128x15 39-41 ms, 128x2 11.5-12; in the fused-cl kernel table SnakeBeta under 15%
# of CUDA time and convolutions >= 45%; the talker step at 512 rows 15-17 ms with decode attention still its largest
# kernel.
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --fast-sine --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 4 8 15 \
    --cudnn-benchmark --no-checks --min-seconds 0.3 --profile --out $OUT/codec_step.json 2>&1 | tail -60
stamp codec
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler --batches 1,128,256,384,512,640 --max-len 512 \
    --check-steps 2 --profile --iters 20 --json $OUT/talker_step.json 2>&1 | tail -60
stamp talker
