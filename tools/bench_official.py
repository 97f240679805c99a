r"""The official qwen-tts 0.1.1 on one of our checkpoints: generate (codes) + decode (waveform), batch sweep, one GPU.

GPU command, from the repo root, carrying .whl_codec (transformers 4.57.3, tokenizers 0.22.1, huggingface-hub 0.36.0,
accelerate 1.12.0, qwen-tts 0.1.1; PYTHONPATH=/tmp/site puts them ahead of the machine's transformers 5.x; the
machine has everything else the measured path imports, so no .whl_official/ is needed, see Imports below). The
checkpoint is the one our side loads: `omni make-tiny-checkpoint --shape 0.6b|1.7b --variant custom_voice`.

    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl_codec/*.whl \
      && PYTHONPATH=/tmp/site python3 tools/bench_official.py --model CKPT_DIR --device cuda \
         --frames 125 --batches 1 8 32 64 --out $OUT/official.json

CPU smoke test (the reference venv, a tiny checkpoint, a few frames):

    .venv/bin/omni make-tiny-checkpoint --variant custom_voice --out /tmp/tiny
    .venv-ref/bin/python tools/bench_official.py --model /tmp/tiny --device cpu --frames 4 --batches 1 2 --out o.json

What is measured: the official wrapper's own entry point, `Qwen3TTSModel.generate_custom_voice(text=[...] * B,
speaker, language)`, loaded as a user would (`Qwen3TTSModel.from_pretrained(dir, device_map, dtype=bf16 on cuda /
fp32 on cpu, attn_implementation="sdpa")`, which also loads the 12 Hz speech tokenizer from dir/speech_tokenizer).
Sampling is the wrapper's default (generation_config.json, else its hard defaults: do_sample, top-k 50, top-p 1.0,
temperature 0.9, repetition penalty 1.05, the same for the sub-talker); the kwargs that reached `model.generate`
and the talker's HF `generate` are recorded. One change: the length is fixed. The official `generate` hard-codes
min_new_tokens=2 for the talker, so the talker's `generate` is wrapped to set min_new_tokens = max_new_tokens (EOS
masked until then).
max_new_tokens = N yields N - 1 frames (the code predictor never runs for the last token drawn, as in ours), so
--frames F passes max_new_tokens = F + 1; every item's frame count and waveform length (F * 1920 samples at 24 kHz)
is checked. The two phases inside the call are timed separately with a device synchronize on each side:
`model.generate` (text -> codes) and `speech_tokenizer.decode` (codes -> waveforms, all frames at once, as the
official non-streaming path does); wall time is the whole wrapper call (tokenising, numpy conversion included).

Per batch B: one short warm-up call (--warmup-frames) at the same B, then the timed call. Reported: wall s, audio s
produced (B * F * 1920 / 24000), audio-s/s = audio s / wall s, RTF = wall s / audio s per item (how long each request
waits per second of its audio), generate / decode split, peak device memory. The sweep stops after a batch that runs
out of memory or takes longer than --max-seconds. "Best batch" = highest audio-s/s. A markdown table is printed and
the JSON is written to --out after every batch.

Imports: qwen_tts/__init__ and qwen_tts/core/__init__ are not run. They import the 25 Hz tokenizer (sox,
onnxruntime, torchaudio) and the audio I/O libraries (librosa, soundfile), none of which the GPU machine has or
the measured path uses. Stubbed here, always (so the CPU smoke test runs the GPU import path): `librosa.load`,
`librosa.resample`, `librosa.filters.mel`, `soundfile.read`/`write` (reference-audio loading, resampling and the
speaker encoder's mel: voice clone only), and the 25 Hz tokenizer model class (registered with AutoModel by the
wrapper, never built for a 12 Hz checkpoint). Each stub raises if it is ever called.
"""

import argparse
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
import time
import types
from pathlib import Path

import torch

SAMPLE_RATE = 24000
DEFAULT_TEXT = (
    "The quick brown fox jumps over the lazy dog, and the evening news reports on the weather for tomorrow morning."
)


# ----------------------------------------------------------------------------------------------------------------
# Importing the official package


def _stub(qualname: str):
    def unavailable(*args, **kwargs):
        raise RuntimeError(f"{qualname} is stubbed by tools/bench_official.py: it is not on the measured path")

    return unavailable


def import_official() -> type:
    """qwen_tts' Qwen3TTSModel, imported without the package __init__ files (see the module docstring)."""
    spec = importlib.util.find_spec("qwen_tts")
    if spec is None:
        raise SystemExit("needs qwen-tts==0.1.1 and transformers 4.57.x importable (see the GPU command above)")
    root = spec.submodule_search_locations[0]
    import transformers  # noqa: F401  (first: its import-time availability checks must see the real environment)

    for name, attrs in (
        ("librosa", ("load", "resample")),
        ("librosa.filters", ("mel",)),
        ("soundfile", ("read", "write")),
    ):
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        for attr in attrs:
            setattr(module, attr, _stub(f"{name}.{attr}"))
        sys.modules[name] = module
    sys.modules["librosa"].filters = sys.modules["librosa.filters"]
    for name, sub in (("qwen_tts", ""), ("qwen_tts.core", "core")):
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, sub)]
        sys.modules[name] = package

    # What qwen_tts/core/__init__ exports, which the wrapper's speech-tokenizer loader registers with AutoModel.
    core = sys.modules["qwen_tts.core"]
    v1_config = importlib.import_module("qwen_tts.core.tokenizer_25hz.configuration_qwen3_tts_tokenizer_v1")
    v2_config = importlib.import_module("qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2")
    v2_model = importlib.import_module("qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2")

    class Tokenizer25HzStub:
        config_class = v1_config.Qwen3TTSTokenizerV1Config
        from_pretrained = staticmethod(_stub("the 25 Hz speech tokenizer"))
        from_config = staticmethod(_stub("the 25 Hz speech tokenizer"))

    core.Qwen3TTSTokenizerV1Config = v1_config.Qwen3TTSTokenizerV1Config
    core.Qwen3TTSTokenizerV1Model = Tokenizer25HzStub
    core.Qwen3TTSTokenizerV2Config = v2_config.Qwen3TTSTokenizerV2Config
    core.Qwen3TTSTokenizerV2Model = v2_model.Qwen3TTSTokenizerV2Model
    return importlib.import_module("qwen_tts.inference.qwen3_tts_model").Qwen3TTSModel


# ----------------------------------------------------------------------------------------------------------------
# The measured call


def scalars(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if isinstance(v, bool | int | float)}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


class OfficialTTS:
    """The official wrapper with its two phases timed and the talker's output length fixed."""

    def __init__(self, model_dir: str, device: str, dtype: torch.dtype):
        qwen3_tts_model = import_official()
        self.device = device
        self.tts = qwen3_tts_model.from_pretrained(
            model_dir, device_map=device, dtype=dtype, attn_implementation="sdpa"
        )
        model = self.tts.model
        if model.tts_model_type != "custom_voice" or model.tokenizer_type != "qwen3_tts_tokenizer_12hz":
            raise SystemExit(
                f"{model_dir}: need a 12 Hz CustomVoice checkpoint, got {model.tokenizer_type} {model.tts_model_type}"
            )
        self.samples_per_frame = int(model.speech_tokenizer.get_decode_upsample_rate())
        self.sample_rate = int(model.speech_tokenizer.get_output_sample_rate())
        self.seconds: dict[str, float] = {}
        self.generate_kwargs: dict = {}  # what the wrapper passed to model.generate
        self.talker_kwargs: dict = {}  # what model.generate passed to the talker's HF generate (after our override)
        self.frames: list[int] = []
        self._wrap(model)

    def _wrap(self, model) -> None:
        talker_generate, generate, decode = model.talker.generate, model.generate, model.speech_tokenizer.decode

        def fixed_length_talker_generate(*args, **kwargs):
            kwargs["min_new_tokens"] = kwargs["max_new_tokens"]  # the official generate passes 2
            self.talker_kwargs = scalars(kwargs)
            return talker_generate(*args, **kwargs)

        def timed_generate(*args, **kwargs):
            self.generate_kwargs = scalars(kwargs)
            sync(self.device)
            start = time.perf_counter()
            codes, hidden = generate(*args, **kwargs)
            sync(self.device)
            self.seconds["generate"] = time.perf_counter() - start
            self.frames = [int(c.shape[0]) for c in codes]
            return codes, hidden

        def timed_decode(*args, **kwargs):
            sync(self.device)
            start = time.perf_counter()
            result = decode(*args, **kwargs)
            sync(self.device)
            self.seconds["decode"] = time.perf_counter() - start
            return result

        model.talker.generate = fixed_length_talker_generate
        model.generate = timed_generate
        model.speech_tokenizer.decode = timed_decode

    def synthesize(self, batch: int, frames: int, text: str, speaker: str, language: str) -> dict:
        """One timed wrapper call: `batch` copies of `text`, exactly `frames` frames each."""
        self.seconds, self.frames = {}, []
        if self.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(self.device)
        sync(self.device)
        start = time.perf_counter()
        wavs, sample_rate = self.tts.generate_custom_voice(
            text=[text] * batch, speaker=speaker, language=language, max_new_tokens=frames + 1
        )
        sync(self.device)
        wall = time.perf_counter() - start
        want_samples = frames * self.samples_per_frame
        if self.frames != [frames] * batch or [len(w) for w in wavs] != [want_samples] * batch:
            raise RuntimeError(
                f"fixed length broken: want {frames} frames / {want_samples} samples per item, "
                f"got frames {self.frames}, samples {[len(w) for w in wavs]}"
            )
        if sample_rate != SAMPLE_RATE:
            raise RuntimeError(f"official decode returned {sample_rate} Hz, expected {SAMPLE_RATE}")
        audio_per_item = want_samples / sample_rate
        peak = torch.cuda.max_memory_allocated(self.device) / 2**30 if self.device.startswith("cuda") else None
        return {
            "batch": batch,
            "frames": frames,
            "wall_s": round(wall, 4),
            "generate_s": round(self.seconds["generate"], 4),
            "decode_s": round(self.seconds["decode"], 4),
            "other_s": round(wall - self.seconds["generate"] - self.seconds["decode"], 4),
            "audio_s_per_item": audio_per_item,
            "audio_s": round(batch * audio_per_item, 4),
            "audio_s_per_s": round(batch * audio_per_item / wall, 4),
            "rtf": round(wall / audio_per_item, 4),
            "generate_frames_per_s": round(batch * frames / self.seconds["generate"], 2),
            "peak_mem_gib": None if peak is None else round(peak, 3),
        }


# ----------------------------------------------------------------------------------------------------------------


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def markdown_table(rows: list[dict]) -> str:
    lines = [
        "| batch | frames | wall s | audio s | audio-s/s | RTF | generate s | decode s | other s | peak GiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['batch']} | {r['frames']} | {r['error']} |  |  |  |  |  |  |  |")
            continue
        peak = "-" if r["peak_mem_gib"] is None else f"{r['peak_mem_gib']:.2f}"
        lines.append(
            f"| {r['batch']} | {r['frames']} | {r['wall_s']:.2f} | {r['audio_s']:.2f} | {r['audio_s_per_s']:.2f}"
            f" | {r['rtf']:.3f} | {r['generate_s']:.2f} | {r['decode_s']:.2f} | {r['other_s']:.2f} | {peak} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="checkpoint dir, official layout, 12 Hz CustomVoice")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), help="default: bfloat16 on cuda, float32 on cpu")
    parser.add_argument("--frames", type=int, default=125, help="audio frames per item (12.5 Hz: 125 = 10 s)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32, 128, 256, 512])  # flat wall to 512
    parser.add_argument("--max-seconds", type=float, default=120.0, help="stop the sweep after a slower batch")
    parser.add_argument("--warmup-frames", type=int, default=8, help="frames of the warm-up call before each batch")
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument(
        "--speaker", help="a built-in speaker (default: the checkpoint's first non-dialect one, by name)"
    )
    parser.add_argument("--language", default="English")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    if args.frames < 1 or args.warmup_frames < 1 or min(args.batches) < 1:
        parser.error("--frames, --warmup-frames and --batches must be positive")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: CUDA is not available (this script never falls back to the CPU)")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        parser.error(f"--device must be cuda, cuda:N or cpu, got {args.device!r}")
    device = "cuda:0" if args.device == "cuda" else args.device
    dtype = getattr(torch, args.dtype or ("float32" if device == "cpu" else "bfloat16"))
    torch.manual_seed(args.seed)

    official = OfficialTTS(args.model, device, dtype)
    dialect = official.tts.model.config.talker_config.spk_is_dialect or {}
    speaker = args.speaker or sorted(official.tts.get_supported_speakers(), key=lambda s: (bool(dialect.get(s)), s))[0]
    import transformers

    model = official.tts.model
    talker_cfg = model.config.talker_config
    results: dict = {
        "env": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "qwen_tts": importlib.metadata.version("qwen-tts"),
            "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
            "dtype": str(dtype).removeprefix("torch."),
            "attn_implementation": {
                "talker": talker_cfg._attn_implementation,
                "code_predictor": talker_cfg.code_predictor_config._attn_implementation,
                "speech_tokenizer": official.tts.model.speech_tokenizer.model.config._attn_implementation,
            },
        },
        "model": {
            "dir": str(args.model),
            "tts_model_size": model.tts_model_size,
            "talker_hidden_size": talker_cfg.hidden_size,
            "talker_layers": talker_cfg.num_hidden_layers,
            "code_predictor_layers": talker_cfg.code_predictor_config.num_hidden_layers,
            "samples_per_frame": official.samples_per_frame,
            "sample_rate": official.sample_rate,
        },
        "args": vars(args),
        "max_new_tokens": args.frames + 1,
        "speaker": speaker,
        "generate_kwargs": {},
        "talker_kwargs": {},
        "rows": [],
        "best": None,
        "stopped": None,
    }
    print(json.dumps(results["env"]), flush=True)

    def write() -> None:
        ok = [r for r in results["rows"] if "error" not in r]
        results["best"] = max(ok, key=lambda r: r["audio_s_per_s"]) if ok else None
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=2) + "\n")

    for batch in args.batches:
        try:
            official.synthesize(batch, args.warmup_frames, args.text, speaker, args.language)
            row = official.synthesize(batch, args.frames, args.text, speaker, args.language)
        except Exception as exc:  # noqa: BLE001 - an OOM ends the sweep with a row; anything else is raised
            if not is_oom(exc):
                raise
            results["rows"].append({"batch": batch, "frames": args.frames, "error": "OOM"})
            results["stopped"] = f"batch {batch}: out of memory"
            print(json.dumps(results["rows"][-1]), flush=True)
            torch.cuda.empty_cache()
            break
        finally:
            write()
        results["generate_kwargs"], results["talker_kwargs"] = official.generate_kwargs, official.talker_kwargs
        results["rows"].append(row)
        write()
        print(json.dumps(row), flush=True)
        if row["wall_s"] > args.max_seconds:
            results["stopped"] = f"batch {batch}: {row['wall_s']:.1f} s > --max-seconds {args.max_seconds:g}"
            break
    write()

    print(f"\nofficial qwen-tts, {args.model} ({model.tts_model_size}), {results['env']['device']}, {dtype}")
    print(markdown_table(results["rows"]))
    if results["best"]:
        best = results["best"]
        print(f"best batch {best['batch']}: {best['audio_s_per_s']:.2f} audio-s/s (RTF {best['rtf']:.3f})")
    if results["stopped"]:
        print(f"sweep stopped at {results['stopped']}")


if __name__ == "__main__":
    main()
