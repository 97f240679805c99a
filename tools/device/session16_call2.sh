# Session 16, call 2 (run 61; was next_one_gpu.sh). One-GPU call (nvidia-h200, ~5 minutes): where a full GPU's time goes now, component by component, to pick the
# next speed change. Session 15 found the DESIGN's 50x row above one H200's compute ceiling; what raises our ratio to
# the official is our own throughput toward the ~1,390 audio-s/s the measured steps allow (docs/benchmarks.md). The
# last talker-step profile is run 24's (session 6: decode attention 37% of a 512-row step, GEMMs 30%), taken before
# the predictor's attention launch settings and everything after; the last codec profile is older still.
# 1. the talker + predictor step at the stack's batch sizes, graph replay, with the top kernels of an eager 512 step;
# 2. the codec step at the service's shapes (fused-cl+graph, cuDNN autotuned as the service does), with its profile.
# Prediction: the talker step at 512 rows ~17 ms with attention still the largest share; the codec ~23 us per frame.
source tools/device/setup.sh
stamp start
python3 tools/bench_talker_step.py --models 1.7B --modes fused+sampler --batches 1,128,256,384,512 --max-len 512 \
    --check-steps 2 --profile --iters 20 --json $OUT/talker_step.json 2>&1 | tail -60
stamp talker
python3 tools/bench_codec.py --modes fused-cl+graph --batches 128 256 --chunks 2 4 8 15 --cudnn-benchmark \
    --no-checks --min-seconds 0.3 --profile --out $OUT/codec_step.json 2>&1 | tail -60
stamp codec
