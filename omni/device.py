"""Host-to-device copies that do not wait for the GPU.

A blocking copy of a pageable host tensor to CUDA synchronizes the stream first: a step that sends several small
inputs that way waits for the previous work on the device each time, and each wait hands the GIL to the process's
other threads (an event loop serving hundreds of streams) for up to the interpreter's switch interval.
"""

import torch


def to_device(host: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """A host tensor on `device` without a host sync: through pinned memory on CUDA (the caching host allocator
    keeps the pinned block until the copy is done)."""
    device = torch.device(device)
    if device.type != "cuda" or host.device.type == "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)
