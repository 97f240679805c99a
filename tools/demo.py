"""`make demo`: the main job on this machine.

Builds a tiny random-weight checkpoint in the official layout (unless OMNI_DEMO_MODEL points at a real one),
synthesises a sentence with `omni synth` through the same engine code the talker service uses, and writes
out/demo.wav. The tiny checkpoint produces noise, not speech: the point is that every stage really runs.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import soundfile as sf

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
OMNI = [sys.executable, "-m", "omni.cli"]


def run(args: list[str]) -> None:
    print("$ omni " + " ".join(args[len(OMNI) :]), flush=True)
    subprocess.run(args, check=True)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    model = os.environ.get("OMNI_DEMO_MODEL")
    if not model:
        model = str(OUT / "tiny-custom-voice")
        if not (Path(model) / "config.json").exists():
            print("No OMNI_DEMO_MODEL given: building a tiny random-weight checkpoint (it will produce noise).")
            run(OMNI + ["make-tiny-checkpoint", "--variant", "custom_voice", "--out", model, "--seed", "0"])
    wav = OUT / "demo.wav"
    start = time.perf_counter()
    run(
        OMNI
        + ["synth", "--model", model, "--text", "Hello from omni, a streaming text to speech server.", "--out", str(wav)]
        + ["--speaker", "vivian", "--language", "english", "--seed", "1234", "--max-frames", "60"]
        + ["--codes-out", str(OUT / "demo_codes.npy")]
    )
    elapsed = time.perf_counter() - start
    info = sf.info(str(wav))
    print(f"wrote {wav}: {info.duration:.2f} s of audio at {info.samplerate} Hz in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
