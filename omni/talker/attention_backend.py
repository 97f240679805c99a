"""Which PyTorch attention kernel the talker's prompt (prefill) forwards use.

Decode steps attend with our own kernel; prompt positions go through `F.scaled_dot_product_attention` with a causal
mask, and PyTorch picks the kernel. Its cuDNN kernel builds an execution graph for every new shape, and a serving
prefill sees a new (batch, length) shape on most steps, so the choice is a setting (`prefill_attention`).
"""

import torch

BACKENDS = ("default", "math", "cudnn")  # the memory-efficient kernel refuses these inputs ("Invalid backend")


def use_attention_backend(name: str) -> None:
    """Allow only `name`'s kernel for scaled_dot_product_attention in this process (`default`: all, PyTorch picks).
    Process-wide, like `sdpa_kernel`: set it once, before serving."""
    if name not in BACKENDS:
        raise ValueError(f"attention backend must be one of {BACKENDS}, got {name!r}")
    every = name == "default"
    torch.backends.cuda.enable_flash_sdp(every)
    torch.backends.cuda.enable_mem_efficient_sdp(every)
    torch.backends.cuda.enable_math_sdp(every or name == "math")
    torch.backends.cuda.enable_cudnn_sdp(every or name == "cudnn")
