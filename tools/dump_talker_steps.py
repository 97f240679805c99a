"""A talker's decode steps written to a file, for comparing two checkouts' steps to the bit on one GPU.

Builds a released talker shape with random weights from a fixed seed, as the service builds it on a GPU
(services/talker/service.py's `apply_kernels`, settings from the environment; under TRITON_INTERPRET=1 the same build
on the CPU), prefills every slot (greedy and seeded sampling mixed, as tools/bench_talker_step.py) and runs --steps
eager padded decode steps; writes every step's codes and, at the end, SHA-256 digests of the caches and the hidden
state. Run it from each checkout (copy it into the other's tools/), then compare:

    python tools/dump_talker_steps.py --model 1.7B --out /tmp/new.pt
    (cd /tmp/base && python tools/dump_talker_steps.py --model 1.7B --out /tmp/old.pt)
    python tools/dump_talker_steps.py --compare /tmp/old.pt /tmp/new.pt

Uses only what both sides of a comparison have: `bench_talker_step.build_talker / prefill_all`, `apply_kernels`,
`TalkerRunner.decode_step_padded`.
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()).hexdigest()


def dump(model: str, slots: int, steps: int, device: str, seed: int = 0) -> dict:
    from bench_talker_step import PROMPT_LEN, build_talker, prefill_all
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig
    from omni.services.talker.service import apply_kernels

    from omni.talker.model_runner import TalkerRunner

    torch.manual_seed(seed)  # the weights
    talker, config = build_talker(model, torch.bfloat16, device)
    # Under TRITON_INTERPRET=1 the service's CUDA build runs on the CPU (the interpreter runs its kernels).
    on_cuda = device.startswith("cuda") or os.environ.get("TRITON_INTERPRET") == "1"
    kernels = apply_kernels(talker, load_config(TalkerConfig, "talker", {}), on_cuda=on_cuda)
    runner = TalkerRunner(talker, config, slots, PROMPT_LEN + steps + 8, device, scratch_slot=True, **kernels)
    prefill_all(runner, seed=0)
    batch = torch.arange(slots, device=device)
    codes = []
    with torch.no_grad():
        for _ in range(steps):
            codes.append(runner.decode_step_padded(batch)[0].cpu())
    state = {
        "talker_k": runner.cache.k,
        "talker_v": runner.cache.v,
        "predictor_k": runner.predictor_cache.k,
        "predictor_v": runner.predictor_cache.v,
        "last_hidden": runner.last_hidden,
    }
    return {"codes": torch.stack(codes), "digests": {name: digest(t) for name, t in state.items()}}


def compare(a: dict, b: dict) -> dict:
    result = {"codes_equal": torch.equal(a["codes"], b["codes"]), "steps": int(a["codes"].shape[0])}
    result["codes_differing"] = int((a["codes"] != b["codes"]).sum()) if a["codes"].shape == b["codes"].shape else -1
    result.update({f"{name}_equal": a["digests"][name] == b["digests"].get(name) for name in a["digests"]})
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="1.7B")
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="of the random weights")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        result = compare(*(torch.load(p) for p in args.compare))
        print(json.dumps(result))
        sys.exit(0 if all(v for k, v in result.items() if k.endswith("_equal")) else 1)
    if args.out is None:
        ap.error("--out or --compare")
    torch.save(dump(args.model, args.slots, args.steps, args.device, args.seed), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
