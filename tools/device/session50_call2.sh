# Run 179 (session 50, call 2) = next_one_gpu.sh (nvidia-h200, ~8 minutes): session 42's two step changes at the large batches, then the stack
# with today's defaults at a few streams.
# Why: group-major codes (`TalkerRunner.codes_by_group`, run 169) and gathered lookups (`Qwen3TTSTalker.lookup`,
# run 170) were A/B'd at 1-32 rows only. Past 16 ids a contiguous F.embedding took what the gather takes (1.43-1.47
# us, run 169), but a strided one 3.6-3.7 us: at 64 rows and up the codes' layout is what changes.
# Prediction: against both undone (+codes-by-row+embedding-lookup), 64 rows -0.5 to -1.5%, 256 and 512 rows within
# +-0.5% (17 lookups of a few us in 5.5-11 ms). Rule: if 256 or 512 rows is > 0.5% slower in both orders, gather only
# up to 64 ids (the lookup's threshold) and A/B again. The stack: 1 / 16 / 32 streams within run 167's spread or
# better (18.2-19.3, 193.9-204.7, 346.9-367.2 audio-s/s); decides nothing.
source tools/device/setup.sh
stamp start
# Today's defaults: since run 173 (session 45) with programmatic launch in steps of at most 64 rows.
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
talker_order 1.7B 64,256,512 "$M,$M+codes-by-row+embedding-lookup" ab1
talker_order 1.7B 64,256,512 "$M+codes-by-row+embedding-lookup,$M" ab2
$S --concurrency 1 16 32 --out /tmp/stack; save stack
