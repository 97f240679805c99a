"""Copies between host and device that do not wait for the GPU.

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


class HostCopy:
    """A device tensor on its way to the host: `wait()` returns it there once the copy is done.

    On CUDA the copy goes into pinned memory without a sync and an event marks its end, so the host can queue more
    work before it reads the result; on the CPU the tensor is already there.
    """

    def __init__(self, tensor: torch.Tensor) -> None:
        if tensor.device.type != "cuda":
            self.host, self.done = tensor, None
            return
        self.host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        self.host.copy_(tensor, non_blocking=True)
        self.done = torch.cuda.Event()
        self.done.record()

    def wait(self) -> torch.Tensor:
        if self.done is not None:
            self.done.synchronize()
        return self.host
