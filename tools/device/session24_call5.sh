# Session 24 call 5 (nvidia-h200, ~5 minutes), after session24_call2.sh: the codec's RVQ decode through
# kernels/rvq_lookup.py (`rvq_kernel`, built in session 24, off) in the codec step benchmark, against the same build
# without it, in one call. Set EXTRA to the codec flags call 2 turned on (e.g. EXTRA="--window-kernel").
# Why: the RVQ decode is ~104 ATen ops a step whatever its length (16 codebooks x clamp, index, embedding, divide,
# add; perf-notes session 23 section 7); with the divided codebooks computed once and one lookup-and-sum kernel per
# RVQ group it is 2 kernels plus the two 1x1 output convs. In a graph replay a tiny kernel costs ~2-3 us.
# Prediction (fused-cl+graph, fast sine, 128 rows): 2 frames -0.15-0.3 ms (-1.5-2.5%), 15 frames the same in ms
# (<1%); rvq_kernel_vs_lookups bitwise equal (fp32 and bf16, waveforms and state); graph = eager in each run.
# Rule, written before the run: `rvq_kernel` turns on by default if every check of the second run passes and its
# 128x2 graph step is >= 1.5% shorter than the first run's.
source tools/device/setup.sh
stamp start
B="python3 tools/bench_codec.py --fast-sine --modes fused-cl,fused-cl+graph --batches 128 --chunks 2 15 \
--cudnn-benchmark --min-seconds 0.3 $EXTRA"
$B --no-checks --out $OUT/codec_base.json 2>&1 | grep -v '"stages"' | tail -20
stamp base
$B --rvq-kernel --out $OUT/codec_rvq.json 2>&1 | grep -v '"stages"' | tail -24
stamp rvq_kernel
