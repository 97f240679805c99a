"""What one talker decode step launches, counted on the CPU: the PyTorch ops that each run a kernel, and the Triton
kernel launches (run by the Triton interpreter), by name, as tools/census_codec_step.py counts a codec step. For
predicting how many kernels a change removes before a GPU is lent (`bench_talker_step.py --profile` counts the CUDA
kernels on one).

    TRITON_INTERPRET=1 python tools/census_talker_step.py [--shape 1.7b] [--rows 2] [--rope-per-forward] [--sites]

The talker is built as the service builds it on a GPU (services/talker/service.py's `apply_kernels`: the fused talker
and a `TalkerRunner` with the decode-attention, sampler, short-pass, K/V-write and norm + RoPE + write kernels as the
talker's settings say, read from the environment as the service reads them: OMNI_TALKER_*), at --shape with random
weights in bf16, every row prefilled with a random prompt; one warm-up decode step, then one counted. A step is 16
forwards at the released shapes (the backbone's and the code predictor's 15 passes); `--rope-per-forward` makes RoPE's
frequencies and the code predictor's tables anew in every forward, as before session 35.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any triton import: the kernels run on the CPU

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from census_codec_step import OpCounter, census, report  # noqa: E402
from omni.services.common.config import load_config  # noqa: E402
from omni.services.talker.config import TalkerConfig  # noqa: E402
from omni.services.talker.service import apply_kernels  # noqa: E402

from omni.models.qwen3_tts.config import Qwen3TTSConfig  # noqa: E402
from omni.models.qwen3_tts.talker import Qwen3TTSTalker  # noqa: E402
from omni.models.qwen3_tts.tiny import SHAPES, tiny_config  # noqa: E402
from omni.talker.model_runner import TalkerRunner  # noqa: E402
from omni.talker.prompt import NO_ID, TalkerPrompt  # noqa: E402
from omni.talker.sampling import SamplingParams  # noqa: E402


def build(shape: str, rows: int, rope_per_forward: bool) -> TalkerRunner:
    """The service's CUDA build on the CPU (the Triton kernels run by the interpreter), every row prefilled."""
    settings = load_config(TalkerConfig, "talker", {})
    config = Qwen3TTSConfig.parse(tiny_config("custom_voice", **SHAPES[shape]))
    torch.manual_seed(0)
    talker = Qwen3TTSTalker(config.talker).to(torch.bfloat16).eval()
    talker.keep_rope_frequencies(not rope_per_forward)
    kernels = apply_kernels(talker, settings, on_cuda=True)  # as on a GPU; the interpreter runs the kernels here
    table = not rope_per_forward
    runner = TalkerRunner(talker, config, rows, 64, "cpu", scratch_slot=True, predictor_tables=table, **kernels)
    gen = torch.Generator().manual_seed(1)
    for slot in range(rows):
        prompt = TalkerPrompt(
            text_ids=torch.randint(0, config.talker.text_vocab_size, (16,), generator=gen),
            codec_ids=torch.full((16,), NO_ID),
            trailing_ids=torch.randint(0, config.talker.text_vocab_size, (4,), generator=gen),
        )
        runner.prefill(slot, prompt, SamplingParams(seed=slot, min_new_tokens=32, max_new_tokens=32))
    return runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="tiny", choices=sorted(SHAPES), help="tiny: the tests' talker")
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--rope-per-forward", action="store_true", help="RoPE's frequencies made by every forward")
    parser.add_argument("--sites", action="store_true", help="also count the PyTorch ops by call site")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET") != "1":
        parser.error("counts on the CPU only: run with TRITON_INTERPRET=1 (or unset)")
    runner = build(args.shape, args.rows, args.rope_per_forward)
    slots = torch.arange(args.rows)
    with torch.no_grad():
        runner.decode_step_padded(slots)  # warm-up: the kernels' first calls, the kept RoPE frequencies
        result = census(lambda: runner.decode_step_padded(slots), OpCounter(args.sites))
    predictor = runner.talker.code_predictor.model
    result["forwards"] = runner.config.talker.num_code_groups  # the backbone's, then a predictor pass per later group
    result["layers"] = {"backbone": len(runner.talker.model.layers), "code_predictor": len(predictor.layers)}
    report(f"{args.shape}, {args.rows} rows, {result['forwards']} forwards", result, args.out)


if __name__ == "__main__":
    main()
