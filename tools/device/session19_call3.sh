# Session 19, call 3 (nvidia-h200): next_one_gpu_3.sh as written at the end of session 18 (header below).
# One-GPU call (nvidia-h200, ~4 minutes), any time after the stacks: where the codec's step time goes (run 61 wrote no
# codec profile: bench_codec.py --profile profiles the eager and Triton modes only) and its fused mode beside it.
# Run 61's codec alone: 128 rows x 2 frames 12.63 ms (20,274 new frames/s), x 15 45.42 ms (42,272); the ramp's small
# chunks run at half the frame rate of the steady ones, and with the lead floor (session 18) a request at 800 streams
# takes 13.4 codec rows instead of 12.0 (more small chunks).
# Prediction: the vocoder's upsampling convolutions most of a 128x15 step, and a 2-frame step dominated by fixed
# per-step work (the decoder transformer over its context window).
source tools/device/setup.sh
stamp start
python3 tools/bench_codec.py --modes eager fused-cl+graph --batches 128 --chunks 2 15 --cudnn-benchmark \
    --no-checks --min-seconds 0.3 --profile --out $OUT/codec_step.json 2>&1 | tail -80
stamp codec
