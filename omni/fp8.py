"""The fp8 K/V cache's values: its element type and the one conversion every write path makes (no Triton here, so
the PyTorch paths and CPU installs share it with the kernels).

e4m3 without infinities (torch's float8_e4m3fn, Triton's float8e4nv): 3 mantissa bits, largest finite value 448.
Values are clamped to +-448 first, so a large key or value saturates rather than becoming NaN, then rounded to
nearest even. Every e4m3 value is exact in bf16, fp16 and fp32, so a read upcasts without a rounding.
"""

import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0


def to_fp8(x: torch.Tensor) -> torch.Tensor:
    """x as an fp8 cache stores it: clamped to +-FP8_MAX, rounded to nearest even (kernels' `stored_as` too)."""
    return x.clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
