# Run 203 (session 57, call 5): run 202's check again on the rebuilt norm + RoPE + write + attention kernel (each
# program now runs its row's whole norm_rope_write_kv with that kernel's code and warps, then attends), then its step
# at 1 and 16 rows against today's defaults, M, A, M, A in one process (~6 minutes).
# Prediction: keys, values and outputs equal to the two kernels' in bf16 and in fp32 at both launches (the norms' sums
# now reduce in one order); the bench's check against the two kernels equal; A against M -1 to +1% at 1 row (each of
# the row's 8 programs runs the row's norms, with 4 warps at the code predictor's launch too), -1.5 to -3% at 16 rows.
# No rule: half an A/B (no 32-512 rows), it decides nothing; next_one_gpu_2.sh is the whole A/B.
source tools/device/setup.sh
stamp start
python3 - <<'PY'
import torch
from omni.kernels.decode_attention import decode_attention, norm_rope_attention
from omni.kernels.kv_write import norm_rope_write_kv
from omni.models.qwen3_tts.talker import rope_cos_sin, rope_frequencies

heads, kv_heads, dim, dev = 16, 8, 128, "cuda"
for dtype in (torch.bfloat16, torch.float32):
    for length in (512, 16):
        gen = torch.Generator(device=dev).manual_seed(length)
        b = 64
        qkv = torch.randn(b, 1, (heads + 2 * kv_heads) * dim, generator=gen, device=dev).to(dtype)
        norms = tuple(((1 + torch.randn(dim, generator=gen, device=dev) * 0.1).to(dtype), 1e-6) for _ in range(2))
        slots = torch.randperm(b, generator=gen, device=dev)
        positions = torch.randint(0, length, (b, 1), generator=gen, device=dev)
        cos, sin = rope_cos_sin(positions, rope_frequencies(dim, 1_000_000.0, dev), dtype)
        caches = [torch.randn(b, length, kv_heads, dim, generator=gen, device=dev).to(dtype) for _ in range(2)]
        want_caches = [c.clone() for c in caches]
        lengths = positions[:, 0] + 1
        q = norm_rope_write_kv(qkv, heads, *norms, cos, sin, *want_caches, slots, positions)
        want = decode_attention(q.reshape(b, heads, dim), *want_caches, slots, lengths)
        got = norm_rope_attention(qkv, heads, *norms, cos, sin, *caches, slots, positions, lengths)
        torch.cuda.synchronize()
        keys_differ = (caches[0] != want_caches[0]).sum().item()
        values_differ = (caches[1] != want_caches[1]).sum().item()
        out_differ = (got != want).sum().item()
        diff = (got.float() - want.float()).abs().max().item()
        # The same kernel twice on the same inputs: deterministic?
        again = norm_rope_attention(qkv, heads, *norms, cos, sin, *[c.clone() for c in want_caches], slots, positions,
                                    lengths)
        print(f"{dtype} cache {length}: keys differing {keys_differ} of {b * kv_heads * dim}, values differing "
              f"{values_differ}, outputs differing {out_differ} of {got.numel()} (max abs {diff:.3g}, output max "
              f"{want.float().abs().max().item():.3g}), the kernel against itself equal: {torch.equal(again, got)}")
PY
stamp check
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1,16 "$M,$A,$M,$A" ab
