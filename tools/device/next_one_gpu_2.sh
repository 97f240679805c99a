# One-GPU call (nvidia-h200, ~5 minutes), any time: the codec transformer's K/V windows through kernels/codec_window.py
# (`window_kernel`, built in session 23, off) in the codec step benchmark, with and without, and where a short step's
# time goes (kernel profile at 2 and 15 frames).
# Why: at 512 streams on one GPU the codec sets the pace again (runs 87-88), and a 128-row codec step is ~7.2 ms
# whatever its length plus ~2.2 ms a frame (run 80's fit; 12.07 ms at 2 frames, 40.33 at 15, fast sine). The PyTorch
# path moves each layer's windows (~19 MB per layer and tensor at 128 rows) in five passes: the rows' gather, the
# concatenation, the new window's gather, a stack, the index put; the kernel does two (~3 GB -> ~1.2 GB a step).
# Prediction: window_kernel_vs_copies bitwise equal in fp32 and bf16; graph = eager bitwise at a full bucket with it;
# fused-cl+graph 128x2 12.1 -> 11.4-11.8 ms, 128x15 40.3 -> 39.6-40.1 (fast sine on both sides); in the eager
# profile at 2 frames the gather / index / cat kernels of the windows gone.
# Rule, written before the run: `window_kernel` turns on by default (the codec setting) if every check of the
# --window-kernel run passes and its 128x2 fused-cl+graph step is >= 3% shorter than the run without.
source tools/device/setup.sh
stamp start
B="python3 tools/bench_codec.py --fast-sine --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 4 15 \
--cudnn-benchmark --min-seconds 0.3"
# Tables and checks print as they come; the profiles (eager, 128 rows, each chunk length) are in the JSON files.
$B --no-checks --profile --out $OUT/codec_copies.json 2>&1 | grep -v '"stages"' | tail -40
stamp copies
$B --window-kernel --profile --out $OUT/codec_window_kernel.json 2>&1 | grep -v '"stages"' | tail -60
stamp window_kernel
