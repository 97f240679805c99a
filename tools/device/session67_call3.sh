# Run 239 (session 67, call 3): the codec's GEMM convs by tiles at the stack's codec shape (run 237 at 512 streams:
# codec batches of 42-49 rows, 4-frame chunks), 64 rows x 4 frames, and the upsamplers at 128 x 1 (run 234: +24%).
# (1) bench_vocoder_convs: every conv1 (dilations 1, 3, 9) and its SnakeBeta, cuDNN against the GEMM by tiles;
# (2) --transposed: the upsamplers (+snake: cuDNN + snakebeta_cl against the GEMM with the SnakeBeta) at 64x4 and 128x1;
# (3) bench_unit_tail --conv2: conv2 + the add + next SnakeBeta by tiles at 64x4.
# Prediction: (1) dilated conv1+snake with today's tiles 0.60-0.80x cuDNN+snake, dilation 1 0.90-1.20x, and some
# 64-row tile (BLOCK_M 64) best at the 768-channel block (M = 64 x 128 samples); (2) today's tiles +snake 0.90-1.10x at 64x4 and 128x1;
# (3) conv2 with today's tiles 0.85-1.00x separate. Rule: a tile table keyed by length goes in only if the fastest
# tiles summed over the step are at least 5% under today's tiles summed at 64x4; the dilation-1 conv1s go into
# conv1_kernel only if their GEMM+snake summed is under 0.95x cuDNN+snake.
source tools/device/setup.sh
stamp start
TILES="128x256x64w8s3 128x128x64w8s3 128x128x32w4s4 64x256x64w8s3 64x128x64w4s4 64x128x32w4s4 64x64x64w4s4 64x64x32w4s4"
timeout 170 python3 tools/bench_vocoder_convs.py --rows 64 --frames 4 --tiles $TILES \
    --out $OUT/conv1_64x4.json > $OUT/conv1_64x4.txt 2>&1
grep -vE "^\s*$" $OUT/conv1_64x4.txt | grep -E "snake|step|fastest|rror|Traceback|^\| *[a-z]" | cut -c1-200 | tail -n 70
stamp conv1
for shape in "64 4" "128 1"; do
    set -- $shape
    timeout 100 python3 tools/bench_vocoder_convs.py --transposed --rows $1 --frames $2 --tiles $TILES \
        --out $OUT/transposed_$1x$2.json > $OUT/transposed_$1x$2.txt 2>&1
    grep -vE "^\s*$" $OUT/transposed_$1x$2.txt | grep -E "snake|step|fastest|rror|Traceback" | cut -c1-200 | tail -n 40
    stamp transposed $1x$2
done
timeout 100 python3 tools/bench_unit_tail.py --conv2 --no-fused --rows 64 --frames 4 --tiles $TILES \
    --out $OUT/conv2_64x4.json > $OUT/conv2_64x4.txt 2>&1
grep -E "separate|conv2|rror" $OUT/conv2_64x4.txt | cut -c1-200 | tail -n 40
stamp conv2
