# Session 24 call 2 (runs 89+): tools/device/next_one_gpu_2.sh as written in session 23, unchanged.
# One-GPU call (nvidia-h200, ~7 minutes), any time: two codec-step changes built in session 23 and off, in the codec
# step benchmark against the step without them, and where a short step's time goes (kernel profiles at 2, 4 and 15
# frames): the transformer's K/V windows through kernels/codec_window.py (`window_kernel`), and the transformer
# through the talker's fused kernels (`transformer_kernels`).
# Why: at 512 streams on one GPU the codec sets the pace again (runs 87-88), and a 128-row codec step is ~7.2 ms
# whatever its length plus ~2.2 ms a frame (run 80's fit; 12.07 ms at 2 frames, 40.33 at 15, fast sine).
# - window_kernel: the PyTorch path moves each layer's windows (~19 MB per layer and tensor at 128 rows) in five
#   passes (the rows' gather, the concatenation, the new window's gather, a stack, the index put); the kernel in two
#   (~3 GB -> ~1.2 GB a step). Same bits.
# - transformer_kernels: the transformer is ~381 ATen ops a step (~45 a layer; counted on CPU, perf-notes session 23
#   section 7); fused ~20 a layer. RoPE to the bit, the norms' sums and the one q/k/v GEMM round differently.
# Predictions (fused-cl+graph, fast sine on every side, 128 rows): window kernel 2 frames 12.1 -> 11.4-11.8 ms, 15
# frames 40.3 -> 39.6-40.1; both 2 frames -> 10.8-11.4 ms, 15 frames -> 39.0-39.8; window_kernel_vs_copies bitwise
# equal; transformer_kernels_vs_eager ok (fp32 within 1e-4, bf16 as close to fp32 as eager bf16); graph = eager
# bitwise at a full bucket in each run.
# Rules, written before the run: `window_kernel` turns on by default (the codec setting) if every check of the second
# run passes and its 128x2 graph step is >= 3% shorter than the first run's; `transformer_kernels` turns on if every
# check of the third run passes and its 128x2 graph step is >= 3% shorter than the second run's.
source tools/device/setup.sh
stamp start
B="python3 tools/bench_codec.py --fast-sine --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 4 15 \
--cudnn-benchmark --min-seconds 0.3"
# Tables and checks print as they come; the profiles (eager, 128 rows, each chunk length) are in the JSON files.
$B --no-checks --profile --out $OUT/codec_plain.json 2>&1 | grep -v '"stages"' | tail -30
stamp plain
$B --window-kernel --out $OUT/codec_window.json 2>&1 | grep -v '"stages"' | tail -30
stamp window_kernel
$B --window-kernel --transformer-kernels --profile --out $OUT/codec_window_transformer.json 2>&1 \
    | grep -v '"stages"' | tail -30
stamp transformer_kernels
