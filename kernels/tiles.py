"""A Triton GEMM launch's tile sizes (kernels/unit_tail.py, kernels/vocoder_conv.py), written BMxBNxBKwWARPSsSTAGES."""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Tiles:
    """A launch's tile sizes: rows and output channels per program (unit_tail caps block_n at C's next power of
    two), the K step, warps and software-pipeline stages."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    num_warps: int = 4
    num_stages: int = 3

    @classmethod
    def parse(cls, text: str) -> "Tiles":
        """'128x128x32w4s3' -> Tiles(128, 128, 32, 4, 3) (the form the bench tools take)."""
        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)w(\d+)s(\d+)", text)
        if match is None:
            raise ValueError(f"tiles {text!r}: expected BMxBNxBKwWARPSsSTAGES, e.g. 128x128x32w4s3")
        return cls(*map(int, match.groups()))

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k}w{self.num_warps}s{self.num_stages}"
