"""The talker engine's own host time a step, on the CPU: `_plan` (which slots decode) and `_deliver` (each row's frame
into its stream's buffer, the chunks that fill handed to their streams' queues) over N decoding rows. No model step
runs: the rows are read back as zeros (no stream stops), so what is timed is the Python the event loop runs between
two steps, which on a GPU shared with the codec is time the talker has nothing queued (sessions 28 and 59).

    python tools/bench_engine_host.py [--rows 32 128 480] [--steps 300]

Each stream is past its ramp (15-frame chunks), and stream i starts holding i mod 15 frames, so a step sends about
N/15 chunks, as the steady state of N streams admitted at different times does. Prints a table: rows, ms a step for
each, chunks sent a step.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from omni.models.qwen3_tts.tiny import write_tiny_checkpoint  # noqa: E402
from omni.talker.engine import ChunkPlan, Request, TalkerEngine  # noqa: E402
from omni.talker.generate import SynthesisOptions, Synthesizer  # noqa: E402
from omni.talker.model_runner import TalkerRunner  # noqa: E402
from omni.talker.prompt import SpeechRequest  # noqa: E402

STEADY_FRAMES = 15  # the talker's chunk_frames default
PAST_RAMP = 3  # chunks sent before the steady size: the first chunk and the ramp's 4 and 8


def engine_with_rows(synth: Synthesizer, rows: int) -> tuple[TalkerEngine, list[Request]]:
    """An engine whose `rows` slots each hold a stream that finished its prompt and is past its ramp."""
    runner = TalkerRunner(synth.model.talker, synth.model.config, rows, 64)
    engine = TalkerEngine(runner, max_queue=0)
    params = synth.sampling_params(SynthesisOptions(seed=0, max_new_tokens=32))
    prompt = synth.builder.build(SpeechRequest(text="Hi.", speaker="Ryan", language="English"))
    frame = np.zeros(runner.groups, np.int64)
    requests = []
    for slot in range(rows):
        request = Request(str(slot), prompt, params, ChunkPlan(2, STEADY_FRAMES, (4, 8)))
        request.slot, request.prefilled, request.chunks_sent = slot, len(prompt), PAST_RAMP
        request.buffer = [frame] * (slot % STEADY_FRAMES)
        engine.slots[slot] = request
        requests.append(request)
    return engine, requests


def time_rows(synth: Synthesizer, rows: int, steps: int) -> dict:
    """Median ms a step of `_plan` and of `_deliver`, and the chunks a step sent, over `steps` steps."""
    engine, requests = engine_with_rows(synth, rows)
    decoded = np.zeros((rows, engine.runner.groups + 2), np.int64)  # no stream finishes
    plan_ms, deliver_ms, chunks = [], [], 0
    for _ in range(steps):
        began = time.perf_counter()
        plan = engine._plan()
        plan_ms.append((time.perf_counter() - began) * 1000.0)
        assert len(plan.decodes) == rows and not plan.prefills
        began = time.perf_counter()
        engine._deliver(plan, decoded, [], 20.0)
        deliver_ms.append((time.perf_counter() - began) * 1000.0)
        for request in requests:  # what the streams' handlers would take (not timed)
            while not request.outputs.empty():
                request.outputs.get_nowait()
                chunks += 1
    return {
        "rows": rows,
        "plan_ms": statistics.median(plan_ms),
        "deliver_ms": statistics.median(deliver_ms),
        "chunks_per_step": chunks / steps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[32, 128, 480])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if min(*args.rows, args.steps) < 1:
        parser.error("--rows and --steps must be positive")
    with tempfile.TemporaryDirectory() as tmp:  # the engine needs the loaded model only, not its files
        synth = Synthesizer(write_tiny_checkpoint(Path(tmp), "custom_voice", seed=0))

    print("| rows | _plan ms | _deliver ms | chunks a step |")
    print("|---|---|---|---|")
    for row in (time_rows(synth, rows, args.steps) for rows in args.rows):
        print(f"| {row['rows']} | {row['plan_ms']:.3f} | {row['deliver_ms']:.3f} | {row['chunks_per_step']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
