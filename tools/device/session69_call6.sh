# Run 249 (session 69, call 6, again; run 248 asked for a 128x2 graph, which the codec does not capture: chunk lengths
# 1, 4, 8, 15; its tilings step ran and is not repeated): flat_tiles' margin (FLAT_TILE_SHARE = 0.97: flat tiles only where they are
# at least 3% fewer) against the old rule (flat wherever fewer: share 0.9999), in the codec service's build. Run 244's
# rule was met: at 128x15 the two dilation-3 conv1s ran 10.7% and 9.4% faster within rows (+ SnakeBeta) than with the
# flat tiles the old rule gave them. The margin also sends within rows, at 128 rows: the 384-channel block's conv1s
# at dilation 1 and 3 and its conv2s at 15 frames (2,406 / 2,418 / 2,400 flat tiles against 2,432), the 768-channel
# block's dilation-3 conv1s at 15 frames (498 / 512), and the 384-channel dilation-9 conv1s at 2 frames (374 / 384).
# Measured: bench_codec_ticks' replay by kernel at 128x15 and 128x4 (no 2-frame graph: 2 frames run in 4) and its tick mix at 128 rows, processes
# alternating new / old / new / old; then bench_vocoder_convs --both-tilings at 128x15 with the new rule (its plain
# side is then the rows tiling for those two conv1s).
# Prediction: the 128x15 replay 0.15-0.4 ms shorter by kernel with the margin (of ~36 ms; run 244's two dilation-3
# conv1s alone: 0.09 + 0.15 ms a launch, 2 units each), the 128x4 replay within +-1% (no tiling changes there), the tick mix within +-1%.
# Rule: the margin stays (on by default, as committed in session 69) if the 128x15 replay is shorter in both pairs
# and the 128x4 replay not > 1% longer in either; else it is reverted.
source tools/device/setup.sh
stamp start
share_run() {  # share_run SHARE SCRIPT ARGS...: a tool with vocoder_conv.FLAT_TILE_SHARE set first
    python3 -c "import runpy, sys; import omni.kernels.vocoder_conv as v; v.FLAT_TILE_SHARE = float(sys.argv[1]); \
sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')" "$@"
}
i=0
for side in new old new old; do
    i=$((i + 1))
    share=0.97; [ $side = old ] && share=0.9999
    share_run $share tools/bench_codec_ticks.py --kernels 128x15 128x4 --rows 128 --ticks 2 --iters 10 \
        --side-buckets 1 --out $OUT/ticks_${side}_$i.json > $OUT/ticks_${side}_$i.txt 2>&1
    echo "--- $side (share $share)"
    grep -E "Traceback|rror|replay:|^\| 0.62 " $OUT/ticks_${side}_$i.txt | cut -c1-200
    stamp $side
done
