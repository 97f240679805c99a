"""Reference (qwen-tts 0.1.1) side of the generation parity tests; runs in the reference venv.

Usage: python ref_generate.py JOB.json OUT.npz. The job is {"tasks": [...]}, run in order in one process.
A task {"action": "save", ...} writes a checkpoint with the reference's own classes (`save_pretrained`, via
ref_talker.py's "save"). Any other task generates: its "model_dir" is loaded once (cached) with the official
wrapper `Qwen3TTSModel.from_pretrained` (eager attention, fp32) and the task runs through the wrapper's own
entry point (generate_custom_voice / generate_voice_design /
generate_voice_clone), so its templates, validation and defaults apply. Only the final waveform decode is
skipped (the codec has its own parity tests). Outputs are named "<task index>/<name>".

Task fields: "variant" (custom_voice | voice_design | base), "text", "language" (default "Auto"),
"speaker", "instruct", "ref_text", "ref_codes" [[16]...], "x_vector" [H], "x_vector_only",
"non_streaming_mode", "greedy" (do_sample=False, subtalker_dosample=False), "seed", "max_new_tokens";
or "ref_audio" (a file path) instead of ref_codes / x_vector, which the wrapper then encodes itself.

Outputs per task:
  codes [frames, 16] int64     the returned codes (trimmed at EOS, as the official generate does)
  logits [steps, vocab] f32    raw codec_head logits of every codebook-0 draw (prefill's last position first)
  prompt_embeds [L, H] f32     the talker prefill input (instruct + role + control + text part)
  trailing [M, H] f32          the trailing text vectors (tts_pad once when there is no queue)
  error (str as uint8)         set instead of the above when the wrapper raised
"""

import json
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from qwen_tts.inference.qwen3_tts_model import Qwen3TTSModel, VoiceClonePromptItem  # noqa: E402


def load(model_dir: str) -> Qwen3TTSModel:
    tts = Qwen3TTSModel.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32)
    model = tts.model.float().eval()
    for cfg in (model.config, model.talker.config, model.talker.code_predictor.config):
        cfg._attn_implementation = "eager"
    # Skip the waveform decode: codes are what these tests compare.
    model.speech_tokenizer.decode = lambda items: ([np.zeros(1, np.float32) for _ in items], 24000)
    return tts


def run_task(tts: Qwen3TTSModel, task: dict) -> dict[str, np.ndarray]:
    model = tts.model
    talker = model.talker
    captured: dict[str, list] = {"logits": [], "prompt": [], "trailing": []}
    codes_out: list = []

    def on_logits(_module, _inputs, output):
        captured["logits"].append(output[0, -1].detach().clone())

    def on_talker(_module, _args, kwargs):
        embeds = kwargs.get("inputs_embeds")
        if embeds is not None and embeds.shape[1] > 1:
            captured["prompt"].append(embeds[0].detach().clone())
            captured["trailing"].append(kwargs["trailing_text_hidden"][0].detach().clone())

    original_generate = model.generate

    def recording_generate(*args, **kwargs):
        result = original_generate(*args, **kwargs)
        codes_out.append(result[0][0].detach().clone())
        return result

    hooks = [
        talker.codec_head.register_forward_hook(on_logits),
        talker.register_forward_pre_hook(on_talker, with_kwargs=True),
    ]
    model.generate = recording_generate
    try:
        if "seed" in task:
            torch.manual_seed(int(task["seed"]))
        gen = dict(max_new_tokens=int(task["max_new_tokens"]))
        if task.get("greedy", True):
            gen.update(do_sample=False, subtalker_dosample=False)
        if task.get("non_streaming_mode") is not None:
            gen["non_streaming_mode"] = bool(task["non_streaming_mode"])
        language = task.get("language") or "Auto"
        variant = task["variant"]
        if variant == "custom_voice":
            tts.generate_custom_voice(
                text=task["text"], speaker=task.get("speaker"), language=language, instruct=task.get("instruct"), **gen
            )
        elif variant == "voice_design":
            tts.generate_voice_design(text=task["text"], instruct=task.get("instruct") or "", language=language, **gen)
        elif variant == "base":
            xvec_only = bool(task.get("x_vector_only", False))
            if task.get("ref_audio"):
                voice = dict(ref_audio=task["ref_audio"], ref_text=task.get("ref_text"), x_vector_only_mode=xvec_only)
            else:
                item = VoiceClonePromptItem(
                    ref_code=None if xvec_only else torch.tensor(task["ref_codes"], dtype=torch.long),
                    ref_spk_embedding=torch.tensor(task["x_vector"], dtype=torch.float32),
                    x_vector_only_mode=xvec_only,
                    icl_mode=not xvec_only,
                    ref_text=task.get("ref_text"),
                )
                voice = dict(voice_clone_prompt=[item])
            tts.generate_voice_clone(text=task["text"], language=language, **voice, **gen)
        else:
            raise ValueError(f"unknown variant {variant!r}")
    except (ValueError, NotImplementedError, KeyError) as e:
        return {"error": np.frombuffer(f"{type(e).__name__}: {e}".encode(), dtype=np.uint8)}
    finally:
        for h in hooks:
            h.remove()
        model.generate = original_generate
    return {
        "codes": codes_out[0].to(torch.int64).numpy(),
        "logits": torch.stack(captured["logits"]).float().numpy(),
        "prompt_embeds": captured["prompt"][0].float().numpy(),
        "trailing": captured["trailing"][0].float().numpy(),
    }


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    models: dict[str, Qwen3TTSModel] = {}
    results: dict[str, np.ndarray] = {}
    for i, task in enumerate(job["tasks"]):
        if task.get("action") == "save":
            from ref_talker import save  # the talker engineer's writer of reference checkpoints

            outputs = save(task)
        else:
            model_dir = task.get("model_dir") or job["model_dir"]
            if model_dir not in models:
                models[model_dir] = load(model_dir)
            outputs = run_task(models[model_dir], task)
        for name, value in outputs.items():
            results[f"{i}/{name}"] = value
    np.savez(sys.argv[2], **results)


if __name__ == "__main__":
    main()
