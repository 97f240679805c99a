"""The fused element-wise kernels against their eager definitions, element by element, on one GPU.

    python tools/check_fused_kernels.py --out fused_kernels.json

Compiled for the GPU, a kernel can differ from the eager ops where the CPU tests (the Triton interpreter) cannot
see it: the compiler may contract a product and the sum after it into one FMA (session 31 found it in RoPE and
in the LayerScale's add, from the PTX). For each kernel of kernels/transformer_fused.py, in fp32 and bf16, at the
talker's and the codec transformer's shapes, this prints how many output elements differ from the eager
reference and by how much. RoPE alone and the residual sums are expected bit for bit; a norm sums its squares in
another order than PyTorch, so it may differ by an ulp (and RoPE after it, more where its two products cancel).
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni.kernels import transformer_fused as tf  # noqa: E402  (on the GPU machine: tools/device/setup.sh maps it)

SHAPES = {  # name: (rows, heads, head_dim, hidden)
    "talker": (512, 16, 128, 2048),
    "codec": (1920, 16, 64, 1024),
}


def compare(got: torch.Tensor, want: torch.Tensor) -> dict:
    """Differing elements, the largest difference and the reference's largest magnitude (its scale)."""
    return {
        "equal": torch.equal(got, want),
        "differing": int((got != want).sum()),
        "elements": want.numel(),
        "max_abs_diff": float((got.float() - want.float()).abs().max()),
        "ref_max_abs": float(want.float().abs().max()),
    }


def cases(rows: int, heads: int, dim: int, hidden: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    def rand(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen, device=gen.device) * scale).to(dtype)

    x, d = rand(rows, hidden), rand(rows, hidden)
    w, scale = 1 + rand(hidden, scale=0.1), rand(hidden, scale=0.1)
    qk, head_w = rand(1, rows, heads, dim), 1 + rand(dim, scale=0.1)
    angles = torch.rand(1, rows, 1, dim // 2, generator=gen, device=gen.device) * 100
    cos, sin = (torch.cat((f(angles), f(angles)), dim=-1).to(dtype) for f in (torch.cos, torch.sin))
    total, normed = tf.add_rms_norm(x, d, w, 1e-6)
    s_total, s_normed = tf.add_rms_norm(x, d, w, 1e-6, scale=scale)
    want_total, want_normed = tf.add_rms_norm_reference(x, d, w, 1e-6)
    want_s_total, want_s_normed = tf.add_rms_norm_reference(x, d, w, 1e-6, scale=scale)
    return {
        "rope": compare(tf.rms_norm_rope(qk, None, 0.0, cos, sin), tf.rope_reference(qk, cos, sin)),
        "norm_rope": compare(tf.rms_norm_rope(qk, head_w, 1e-6, cos, sin),
                             tf.rms_norm_rope_reference(qk, head_w, 1e-6, cos, sin)),
        "rms_norm": compare(tf.rms_norm(x, w, 1e-6), tf.rms_norm_reference(x, w, 1e-6)),
        "add_sum": compare(total, want_total),
        "add_norm": compare(normed, want_normed),
        "scaled_add_sum": compare(s_total, want_s_total),
        "scaled_add_norm": compare(s_normed, want_s_normed),
        "silu_mul": compare(tf.silu_mul(x, d), tf.silu_mul_reference(x, d)),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda", help="cpu: under TRITON_INTERPRET=1 (the script's own check)")
    parser.add_argument("--rows", type=int, help="tokens per case (default: each shape's own)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    gen = torch.Generator(device=args.device).manual_seed(args.seed)
    results = []
    print("| shape | dtype | kernel | equal | differing / elements | max abs diff | reference max abs |")
    print("|---|---|---|---|---|---|---|")
    for shape, dims in SHAPES.items():
        for dtype in (torch.float32, torch.bfloat16):
            for kernel, row in cases(args.rows or dims[0], *dims[1:], dtype, gen).items():
                results.append({"shape": shape, "dtype": str(dtype).removeprefix("torch."), "kernel": kernel, **row})
                r = results[-1]
                print(f"| {shape} | {r['dtype']} | {kernel} | {r['equal']} | {r['differing']} / {r['elements']} "
                      f"| {r['max_abs_diff']:.3g} | {r['ref_max_abs']:.3g} |", flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"device": str(gen.device), "rows": results}, indent=1))


if __name__ == "__main__":
    main()
