"""What one codec step launches, counted on the CPU: the PyTorch ops that each run a kernel, and the Triton kernel
launches (run by the Triton interpreter), by name. For predicting how many kernels a change removes before a GPU is
lent; `bench_codec_ticks.py --kernels` counts the CUDA kernels on one (run 131: 251 a 1x1 replay with the
defaults, where this counted 225, 222 since the RoPE table's 3 ops fewer; run 127 272 against 246: cuDNN's extra
kernels and memsets are not PyTorch ops).

    TRITON_INTERPRET=1 python tools/census_codec_step.py [--tiny] [--on window_pair_kernel] [--off add_norm_kernel]
        [--sites]

The decoder is built as the service builds it on a GPU (`engine.apply_kernels`: the vocoder's fused kernels and the
kernel switches of the codec's settings, read from the environment as the service reads them: OMNI_CODEC_*), with
random weights, in bf16; --on and --off override single switches. One warm-up step, then one counted step of --rows
rows of --frames frames.
"""

import argparse
import collections
import json
import os
import sys
import traceback
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: the kernels run on the CPU

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from omni.services.codec.config import CodecConfig  # noqa: E402
from omni.services.codec.engine import apply_kernels  # noqa: E402
from omni.services.common.config import load_config  # noqa: E402

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER  # noqa: E402
from omni.models.qwen3_tts.codec_graphs import codec_step  # noqa: E402

# Ops that move no data (views, allocations): no kernel of their own.
NO_KERNEL = {
    "view", "_unsafe_view", "as_strided", "slice", "select", "transpose", "t", "expand", "unsqueeze", "squeeze",
    "permute", "alias", "detach", "reshape", "split", "split_with_sizes", "unbind", "_reshape_alias", "narrow",
    "empty", "empty_strided", "empty_like", "lift_fresh",
}  # fmt: skip


class OpCounter(TorchDispatchMode):
    """Counts the PyTorch ops dispatched while it is on, by name, except those in NO_KERNEL and those the Triton
    interpreter itself runs (`paused`). With `sites`, also by call site: the op at the innermost frame of the repo's
    packages (`omni/talker/model_runner.py:302`), for reading which line a launch comes from."""

    def __init__(self, sites: bool = False):
        super().__init__()
        self.ops: collections.Counter = collections.Counter()
        self.sites: collections.Counter | None = collections.Counter() if sites else None
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.paused and name not in NO_KERNEL:
            self.ops[name] += 1
            if self.sites is not None:
                self.sites[f"{name} at {call_site()}"] += 1
        return func(*args, **(kwargs or {}))


PACKAGES = [ROOT / name for name in ("omni", "kernels", "services")]  # the repo's code, as call sites


def call_site() -> str:
    """The innermost frame in the repo's packages (omni/, kernels/, services/), as path:line relative to the repo."""
    for frame in reversed(traceback.extract_stack()):
        path = Path(frame.filename).resolve()
        if any(path.is_relative_to(package) for package in PACKAGES):
            return f"{path.relative_to(ROOT)}:{frame.lineno}"
    return "?"


def census(step, counter: OpCounter) -> dict:
    """The ops and Triton launches of one call of `step`."""
    from triton.runtime.interpreter import InterpretedFunction

    launches: collections.Counter = collections.Counter()
    run = InterpretedFunction.run

    def counted_run(self, *args, **kwargs):
        launches[self.fn.__name__] += 1
        counter.paused = True
        try:
            return run(self, *args, **kwargs)
        finally:
            counter.paused = False

    InterpretedFunction.run = counted_run
    try:
        with counter:
            step()
    finally:
        InterpretedFunction.run = run
    return {
        "total": sum(counter.ops.values()) + sum(launches.values()),
        "torch_ops": sum(counter.ops.values()),
        "triton_launches": sum(launches.values()),
        "ops": dict(counter.ops.most_common()),
        "launches": dict(launches.most_common()),
    } | ({"sites": dict(counter.sites.most_common())} if counter.sites is not None else {})


def report(title: str, result: dict, out: Path | None) -> None:
    """Print `title: N launches (...)` and every op and launch by count; write `result` as JSON to `out` if given."""
    print(f"{title}: {result['total']} launches ({result['torch_ops']} PyTorch ops, "
          f"{result['triton_launches']} Triton kernels)")  # fmt: skip
    for kind in ("launches", "ops", "sites"):
        if kind == "sites" and kind in result:
            print("PyTorch ops by call site:")
        for name, count in result.get(kind, {}).items():
            print(f"  {count:4d}  {name}")
    if out:
        out.write_text(json.dumps(result, indent=1))


def build(tiny: bool, on: list[str], off: list[str]) -> CodecDecoder:
    config = load_config(CodecConfig, "codec", {"dtype": "bfloat16"})
    decoder = CodecDecoder(CodecDecoderConfig(**TINY_DECODER) if tiny else CodecDecoderConfig())
    decoder = decoder.to(getattr(torch, config.dtype)).eval()
    apply_kernels(decoder, config)  # as the service on a GPU
    for name in on:
        setattr(decoder, name, True)
    for name in off:
        setattr(decoder, name, False)
    return decoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny decoder instead of the released shape")
    switches = CodecDecoder.KERNEL_SWITCHES
    parser.add_argument("--on", nargs="*", default=[], choices=switches, help="kernel switches to turn on")
    parser.add_argument("--off", nargs="*", default=[], choices=switches, help="kernel switches to turn off")
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--frames", type=int, default=1)
    parser.add_argument("--sites", action="store_true", help="also count the PyTorch ops by call site")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET") != "1":
        parser.error("counts on the CPU only: run with TRITON_INTERPRET=1 (or unset)")
    decoder = build(args.tiny, args.on, args.off)
    state = decoder.new_state(args.rows + 1)
    codes = torch.randint(0, decoder.cfg.codebook_size, (args.rows, args.frames, decoder.cfg.num_quantizers))
    rows, frames = torch.arange(args.rows), torch.full((args.rows,), args.frames)
    with torch.no_grad():
        codec_step(decoder, state, codes, rows, frames)  # warm-up: the kernels' first calls
        result = census(lambda: codec_step(decoder, state, codes, rows, frames), OpCounter(args.sites))
    result["kernel_switches"] = {name: getattr(decoder, name) for name in switches}
    report(f"{args.rows}x{args.frames}", result, args.out)


if __name__ == "__main__":
    main()
