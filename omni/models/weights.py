"""Reading official safetensors checkpoints and loading them strictly into our modules.

Every mismatch fails at load time with a message that names the file and the key, so a
wrong or partial checkpoint is caught before it can produce plausible-looking noise.
"""

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file


class CheckpointError(ValueError):
    """A checkpoint directory is missing a file, or its tensors do not match the model."""


def read_safetensors(directory: str | Path, stem: str = "model") -> dict[str, torch.Tensor]:
    """All tensors of `<stem>.safetensors` or of the shards listed in `<stem>.safetensors.index.json`."""
    directory = Path(directory)
    single = directory / f"{stem}.safetensors"
    index = directory / f"{stem}.safetensors.index.json"
    if single.exists():
        files = [single]
    elif index.exists():
        weight_map = json.loads(index.read_text()).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CheckpointError(f"{index}: no weight_map")
        files = [directory / name for name in sorted(set(weight_map.values()))]
        for f in files:
            if not f.exists():
                raise CheckpointError(f"{index} lists shard {f.name}, which is missing")
    else:
        raise CheckpointError(f"{directory}: neither {single.name} nor {index.name} exists")
    tensors: dict[str, torch.Tensor] = {}
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            for key in handle.keys():
                if key in tensors:
                    raise CheckpointError(f"{f.name}: key {key} appears in more than one shard")
                tensors[key] = handle.get_tensor(key)
    return tensors


def split_prefix(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The tensors under `prefix` (e.g. "talker."), with the prefix removed."""
    return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}


def load_state_strict(
    module: torch.nn.Module,
    state: dict[str, torch.Tensor],
    where: str,
    dtype: torch.dtype | None = None,
) -> None:
    """Copy `state` into `module`; any missing, unexpected or wrongly shaped key is an error naming it.

    Floating-point tensors are cast to `dtype` when given (else to the parameter's dtype).
    """
    expected = dict(module.state_dict())
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    problems = []
    if missing:
        problems.append(f"missing keys: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    if unexpected:
        problems.append(f"unknown keys: {', '.join(unexpected[:10])}{' ...' if len(unexpected) > 10 else ''}")
    for key in sorted(set(expected) & set(state)):
        if tuple(expected[key].shape) != tuple(state[key].shape):
            problems.append(
                f"wrong shape for {key}: checkpoint {tuple(state[key].shape)}, model {tuple(expected[key].shape)}"
            )
    if problems:
        raise CheckpointError(f"{where}: " + "; ".join(problems))
    with torch.no_grad():
        for key, target in expected.items():
            source = state[key]
            if source.is_floating_point():
                source = source.to(dtype or target.dtype)
            target.copy_(source)


def save_safetensors(tensors: dict[str, torch.Tensor], path: str | Path, dtype: torch.dtype | None = None) -> None:
    """Write tensors (contiguous, optionally cast) with the metadata transformers writes."""
    out = {}
    for key, value in tensors.items():
        value = value.detach()
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        out[key] = value.contiguous()
    save_file(out, str(path), metadata={"format": "pt"})
