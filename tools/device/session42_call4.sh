# Session 42 call 4 (run 170). One-GPU call (nvidia-h200, ~5 minutes): embedding lookups as a gather (Qwen3TTSTalker
# .lookup: `weight[ids]` for more than one id), A/B'd on the 1.7B step at 8 and 16 rows in one process, both
# orders; +embedding-lookup is nn.Embedding everywhere (as before).
# Why: run 169's lookup timings (one [2048, 2048] bf16 table): contiguous F.embedding 2.14 / 2.84 / 4.36 / 7.42 us at
# 2 / 4 / 8 / 16 ids, 1.43-1.47 from 17 to 64; `table[ids]` 1.35-1.47 us from 2 to 64 ids, 2.58 at one (F.embedding
# 1.61). A step does 17 lookups (the frame's 16 codebooks and the text id).
# Prediction: 16 rows -1.5 to -2.5% (17 x ~6 us of ~4.77 ms), 8 rows -0.7 to -1.5%. 1 row not timed: its lookups take
# the same path either way (one id: nn.Embedding), and 484 s of device time were left.
# Rule: keep it (gather_lookups on) if the 16-row step is >= 1% faster in both orders and no row count is > 0.5%
# slower in both.
# Then tools/bench_draw.py's first run (sampled and greedy draws; it changed after run 169's probes table).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 8,16 "$M,$M+embedding-lookup" ab1
talker_order 1.7B 8,16 "$M+embedding-lookup,$M" ab2
python3 tools/bench_draw.py --rows 1 16 --out $OUT/draw.json 2>&1 | cut -c1-200
stamp draw
