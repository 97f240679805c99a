# Session 35 call 1 (run 132): next_one_gpu_3.sh as written in session 34.
# One-GPU call (nvidia-h200, ~8 minutes): the codec's `upsample_channels_last` (session 34, built, off): the two
# upsamplers (transposed conv k=s=2, ConvNeXt block with a depthwise k7 conv) in [B, T, C] memory as the vocoder,
# so cuDNN converts no layouts around their 4 convs (run 131: 8 `nchwToNhwcKernel` launches, 0.16 ms at 128x15) and
# their LayerNorm and Linears read the activations as they lie. Checked (fp32 within 1e-4; on the CPU bf16 was
# bitwise and fp32 1.9e-6 apart), A/B'd as a graph step, then over realistic ticks as run 125 decided
# window_pair_kernel; then what a replay launches with it on.
# Prediction: upsample_channels_last_vs_default ok (bf16 bitwise or within the bf16 decoder's own error); graph step
# 1x1 -1 to -4%, 128x15 -0.3 to -1%; ticks of 40 / 81 / 128 rows -0.3 to -1.5% each; with it on a 1x1 replay
# 240-245 kernels (run 131's 251, 3 fewer for the RoPE table, up to 8 conversions fewer), 128x15 265.
# Rule, written before the run: on by default only if the check passes (ok), its ticks are shorter at 40, 81 and 128
# rows with 81 rows at least 0.5% shorter, and its 128x15 graph step is at most 0.5% longer. (bench_codec_ticks
# exits non-zero after timing if the tick's audio is not bitwise: that alone does not fail the rule, as for
# transformer_kernels and attention_kernel, which are not bitwise either.)
source tools/device/setup.sh
stamp start
# Session 34's codec RoPE table (codec.WindowTransformer: cos/sin stored in bf16 by their own kernels, no cast after):
# the same bits as cos in fp32 then a cast on the GPU too (prediction: True True; tested on the CPU).
python3 -c 'import torch; a = torch.arange(0, 2e5, 0.375, device="cuda")[:532480].view(-1, 64) * 1.0001
out = lambda f: f(a, out=torch.empty_like(a, dtype=torch.bfloat16))
print("rope table bitwise:", torch.equal(out(torch.cos), a.cos().bfloat16()), torch.equal(out(torch.sin), a.sin().bfloat16()))'
python3 tools/bench_codec.py --fast-sine --window-kernel --history-kernel --upsample-channels-last \
    --modes fused-cl,fused-cl+graph --batches 16 --chunks 2 --cudnn-benchmark --min-seconds 0.2 \
    --out $OUT/checks.json 2>&1 | grep -E '"check": "(upsample|graph_vs|channels_last_graph)|"error"' | cut -c1-400
stamp checks
F="--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel \
--history-kernel --add-norm-kernel --window-pair-kernel --history-swap-kernel"
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 128 --chunks 15 --cudnn-benchmark \
    --min-seconds 0.5 --no-checks --ab upsample_channels_last --ab-rounds 6 --out $OUT/ab128.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
python3 tools/bench_codec.py $F --modes fused-cl+graph --batches 1 --chunks 1 --cudnn-benchmark \
    --min-seconds 0.3 --no-checks --ab upsample_channels_last --ab-rounds 6 --out $OUT/ab1.json 2>&1 \
    | grep -E '^\{"ab"|"error"'
stamp ab
python3 tools/bench_codec_ticks.py --ab upsample_channels_last --rows 40 81 128 --ticks 3 --iters 5 --ab-rounds 6 \
    --out $OUT/ticks_ab.json 2>&1 | grep -v '^{"ab"' | cut -c1-400
stamp ticks
OMNI_CODEC_UPSAMPLE_CHANNELS_LAST=1 python3 tools/bench_codec_ticks.py --kernels 1x1 128x15 --rows 40 --ticks 1 \
    --iters 3 --out $OUT/census.json 2>&1 | grep -E '^\{"kernels"' | cut -c1-1200
stamp census
