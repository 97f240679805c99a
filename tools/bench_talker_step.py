"""Talker decode step on a GPU: CUDA-graph replay against eager, for correctness and time per step.

Builds the released 0.6B / 1.7B talker shapes (config values from tts-architectures.md §A1.1) with random weights
on the device (no download), prefills every slot with a random prompt, then

1. correctness: three runners over the same weights and prompts (greedy and seeded-sampling slots mixed) step the
   same mixed batches (padding rows included): graph replay must equal the eager padded step bit for bit; the share
   of codes equal to the unpadded eager `decode_step` is reported (other batch shapes may pick other GEMM kernels);
2. timing: ms per decode step at each batch size, eager `decode_step` against `TalkerGraphs.decode_step`.

    python tools/bench_talker_step.py --models 0.6B,1.7B --batches 1,16,64,256 --max-len 2048
"""

import argparse
import json
import os
import time

import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.qwen3_tts.tiny import tiny_config
from omni.talker.cuda_graphs import TalkerGraphs
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import NO_ID, TalkerPrompt
from omni.talker.sampling import SamplingParams

# The released talker and code-predictor shapes (the 1.7B adds the 2048 -> 1024 projection by itself).
SIZES = {
    "0.6B": {"hidden_size": 1024, "intermediate_size": 3072},
    "1.7B": {"hidden_size": 2048, "intermediate_size": 6144},
}
COMMON = {
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "text_hidden_size": 2048,
    "predictor_hidden_size": 1024,
    "predictor_intermediate_size": 3072,
    "predictor_num_hidden_layers": 5,
    "predictor_num_attention_heads": 16,
    "predictor_num_key_value_heads": 8,
    "predictor_head_dim": 128,
}
PROMPT_LEN = 24


def build_talker(name: str, dtype: torch.dtype, device: str) -> tuple[Qwen3TTSTalker, Qwen3TTSConfig]:
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice", **COMMON, **SIZES[name]))
    with torch.device(device):
        talker = Qwen3TTSTalker(config.talker)
    return talker.to(dtype).eval(), config


def params_for(slot: int) -> SamplingParams:
    """Even slots greedy, odd slots seeded sampling (official defaults); EOS blocked so every slot keeps going."""
    return SamplingParams(seed=1000 + slot, do_sample=slot % 2 == 1, subtalker_dosample=slot % 2 == 1,
                          min_new_tokens=10_000, max_new_tokens=10_000)  # fmt: skip


def prefill_all(runner: TalkerRunner, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for slot in range(runner.num_slots):
        prompt = TalkerPrompt(
            text_ids=torch.randint(0, 150_000, (PROMPT_LEN,), generator=gen),
            codec_ids=torch.full((PROMPT_LEN,), NO_ID),
            trailing_ids=torch.randint(0, 150_000, (8,), generator=gen),
        )
        p = params_for(slot)
        p.max_new_tokens = runner.max_len - PROMPT_LEN
        runner.prefill(slot, prompt, p)


def check_correctness(talker, config, steps: int, device: str) -> dict:
    slots, max_len = 64, PROMPT_LEN + steps + 8
    runners = [TalkerRunner(talker, config, slots, max_len, device, scratch_slot=True) for _ in range(3)]
    for r in runners:
        prefill_all(r, seed=0)
    graphs = TalkerGraphs(runners[0], (1, 8, 16, 64))
    gen = torch.Generator().manual_seed(1)
    batches = [5, 64, 37, 1, 16, 12]
    exact_padded, equal_codes, total_codes = True, 0, 0
    for step in range(steps):
        n = batches[step % len(batches)]
        batch = torch.randperm(slots, generator=gen)[:n].sort().values.to(device)
        padded = torch.full((graphs.bucket_for(n),), runners[1].scratch_slot, device=device)
        padded[:n] = batch
        g_codes, g_fin = graphs.decode_step(batch)
        g_codes, g_fin = g_codes.clone(), g_fin.clone()
        p_codes, p_fin = runners[1].decode_step_padded(padded)
        e_codes, _ = runners[2].decode_step(batch)
        exact_padded &= torch.equal(g_codes, p_codes[:n]) and torch.equal(g_fin, p_fin[:n])
        equal_codes += int((g_codes == e_codes).sum())
        total_codes += g_codes.numel()
    same_state = all(
        torch.equal(getattr(runners[0], name)[:slots], getattr(runners[1], name)[:slots])
        for name in ("pending", "next_pos", "drawn", "seen", "last_hidden")
    )
    del runners, graphs
    return {"graph_equals_eager_padded": bool(exact_padded and same_state), "steps": steps,
            "codes_equal_to_unpadded_eager": f"{equal_codes}/{total_codes}"}  # fmt: skip


def time_steps(step, slots: torch.Tensor, iters: int) -> float:
    for _ in range(3):
        step(slots)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step(slots)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="0.6B,1.7B")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--max-len", type=int, default=2048, help="positions per slot (the service's max_context)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--check-steps", type=int, default=12)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_talker_step.json"))
    args = ap.parse_args()
    device, dtype = "cuda", getattr(torch, args.dtype)
    batches = [int(b) for b in args.batches.split(",")]
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": args.dtype,
               "max_len": args.max_len, "iters": args.iters, "models": {}}  # fmt: skip
    for name in args.models.split(","):
        torch.manual_seed(0)
        talker, config = build_talker(name, dtype, device)
        out: dict = {"check": check_correctness(talker, config, args.check_steps, device)}
        print(name, "correctness", out["check"], flush=True)
        runner = TalkerRunner(talker, config, max(batches), args.max_len, device, scratch_slot=True)
        prefill_all(runner, seed=2)
        start = time.perf_counter()
        graphs = TalkerGraphs(runner, batches)
        out["capture_s"] = round(time.perf_counter() - start, 2)
        out["reserved_gib"] = round(torch.cuda.memory_reserved() / 2**30, 1)  # K/V of every slot included
        out["steps"] = {}
        for b in batches:
            slots = torch.arange(b, device=device)
            eager = time_steps(runner.decode_step, slots, args.iters)
            graph = time_steps(graphs.decode_step, slots, args.iters)
            out["steps"][b] = {
                "eager_ms": round(eager, 3),
                "graph_ms": round(graph, 3),
                "speedup": round(eager / graph, 2),
                "graph_frames_per_s": round(b / graph * 1e3),
            }
            print(name, f"batch {b}: eager {eager:.2f} ms, graph {graph:.2f} ms ({eager / graph:.2f}x)", flush=True)
        results["models"][name] = out
        del runner, graphs, talker
        torch.cuda.empty_cache()
    print(json.dumps(results, indent=1))
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
