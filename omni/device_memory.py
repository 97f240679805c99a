"""A device's free memory, and a refusal to allocate a buffer that cannot fit in it.

A talker sized past its GPU (run 215: 1,024 slots of 510 positions, 61.7 GiB beside a 16 GiB codec on an 80 GB card)
stopped deep in torch with an out-of-memory traceback. Checked before the allocation, the error says what needed how
much, what the device has free, and which settings change it.
"""

import torch

GIB = 2**30


class NotEnoughMemory(MemoryError):
    """A buffer larger than its device's free memory, refused before it was allocated."""


def free_bytes(device: torch.device | str) -> int | None:
    """Bytes `device` can still give: on CUDA the driver's free memory (other processes' use counted) plus what this
    process's caching allocator holds unused; on the CPU the kernel's MemAvailable; None where it is not known."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if device.type == "cpu":
        try:
            with open("/proc/meminfo") as meminfo:
                for line in meminfo:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024  # kB
        except OSError:
            return None
    return None


def ensure_room(need: int, device: torch.device | str, what: str) -> None:
    """Raise NotEnoughMemory when `need` bytes for `what` exceed `device`'s free memory (nothing where it is not
    known)."""
    free = free_bytes(device)
    if free is not None and need > free:
        raise NotEnoughMemory(f"{what} needs {need / GIB:.2f} GiB and {device} has {free / GIB:.2f} GiB free")
