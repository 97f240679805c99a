# Run 180 (session 50, call 3) = next_one_gpu.sh (nvidia-h200, ~6 minutes): the GEMMs' weights asked of L2 before their
# wait (`programmatic_prefetch_weights`, bench +prefetch-weights), A/B at 1, 16, 32 and 64 rows, both orders.
# Why: run 178 (H200, today's defaults, 16 rows) put the GEMM kernels' exposed time at 2,763 us of a 4,462 us step
# (445 launches, 6.2 us each) for ~5.3 GB of weights: ~1.9 TB/s, where a weight streamed alone reads more. The kernel
# ahead of each GEMM (add+norm 1.4 us, norm+RoPE+write 2.4, attention 4.2, SiLU 1.0 exposed) runs while the GEMM's
# programs, launched programmatically, wait; early weights (run 175) loaded a first chunk into registers there but
# cost the dot kernel a pipeline stage (16 rows +13.9%). A prefetch to L2 (8 MB a GEMM over its programs) holds no
# register or stage, and the loads after the wait find those lines in L2.
# Prediction: 16 and 32 rows -3 to -8%, 1 row -1 to -4%, 64 rows -1 to -4%; every check equal (the same bits).
# Rule: on by default if 1, 16 and 32 rows are each >= 1% faster in both orders and 64 rows is not > 0.3% slower in
# both; else off (if only 1 row loses, bound the prefetch to the dot kernel and A/B again).
source tools/device/setup.sh
stamp start
# Today's defaults: since run 173 (session 45) with programmatic launch in steps of at most 64 rows.
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64
talker_order 1.7B 1,16,32,64 "$M,$M+prefetch-weights" ab1 --profile-replays 16
talker_order 1.7B 1,16,32,64 "$M+prefetch-weights,$M" ab2
