# Run 202 (session 57, call 4): why run 201's check found the norm + RoPE + write + attention kernel not equal to the
# two kernels on the GPU when the CPU tests (Triton's interpreter) find it equal bit for bit. The kernels alone on
# random inputs at the 1.7B's attention shapes (16 q heads, 8 kv heads of 128; the backbone's 64-key launch over a
# 512-position cache and the code predictor's 16-key launch over 16), bf16 and fp32: are the written keys the same
# (a key differs only if the norm's arithmetic does, not the barrier), and how far apart are the outputs.
# Prediction: the keys and the queries differ in a few elements by one rounding (the per-head sums of squares reduce in
# the order of each kernel's layout: [16 heads, 64] in one, [2, 64] and [1, 64] in the other), the values are equal, and
# the outputs differ by about a bf16 rounding; in fp32 the same, by about an fp32 rounding. No rule: it says which.
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
