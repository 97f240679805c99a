# Run 141 (session 37, call 2): next_one_gpu.sh as it stood.
# One-GPU call (nvidia-h200, ~4 minutes), any time: upsample_channels_last (on since run 132) against the upsamplers
# in the default layout on short codec steps of 128 rows (1, 2, 4 frames) and at 128x15, in one process, rounds
# alternating (bench_codec --ab).
# Why: run 137 (today's defaults) timed the graph step at 128x1 / 128x2 / 128x4 5.05 / 7.20 / 11.40 ms, 23% / 16% /
# 10% longer than run 130's (session 34's defaults, upsamplers in the default layout, another machine), while 128x15
# was as before (34.05 vs 34.60). Run 132's A/B timed 1x1 (-5.3%), 128x15 (-1.2%) and ticks of 40-128 mixed rows
# (-0.9 to -2.3%), never 128x1-4; run 137's host was slower (eager steps 2-2.5x longer), so the gap may be the machine.
# Prediction: with it, 128x1-4 within -3% .. +2% of without, 128x15 -0.5 .. -2%.
# Rule, written before the run: if any of 128x1, 128x2, 128x4 is more than 3% slower with it (the median of six
# rounds), the codec's short steps get their own look (a per-chunk choice, or the ticks again with more short rows);
# otherwise the gap in run 137 is the machine's and nothing changes.
source tools/device/setup.sh
stamp start
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 1 2 4 15 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab upsample_channels_last --ab-rounds 6 --out $OUT/codec_ab.json 2>&1 \
    | grep -E '"ab"|error|Error' | cut -c1-300
stamp ab
