"""Reference (qwen-tts 0.1.1) side of the generation parity tests; runs in the reference venv.

Usage: python ref_generate.py JOB.json OUT.npz. The job is {"tasks": [...]}, run in order in one process.
A task {"action": "save", ...} writes a checkpoint with the reference's own classes (`save_pretrained`, via
ref_talker.py's "save"). Any other task generates: its "model_dir" is loaded once (cached) with the official
wrapper `Qwen3TTSModel.from_pretrained` (eager attention, fp32) and the task runs through the wrapper's own
entry point (generate_custom_voice / generate_voice_design /
generate_voice_clone), so its templates, validation and defaults apply. Only the final waveform decode is
skipped (the codec has its own parity tests). Outputs are named "<task index>/<name>".

Task fields: "variant" (custom_voice | voice_design | base), "non_streaming_mode", "greedy" (do_sample=False,
subtalker_dosample=False), "seed", "max_new_tokens", and the request: "text", "language" (default "Auto"),
"speaker", "instruct", "ref_text", "ref_codes" [[16]...], "x_vector" [H], "x_vector_only", or "ref_audio"
(a file path) instead of ref_codes / x_vector, which the wrapper then encodes itself. A task may instead
hold several requests in "items": they run as one official (left-padded) batch, outputs "<task>/<item>/<name>".

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


def voice_clone_voice(items: list[dict]) -> dict:
    """generate_voice_clone's voice arguments: reference audio files, or ready codes + x-vectors."""
    xvec_only = [bool(it.get("x_vector_only", False)) for it in items]
    if items[0].get("ref_audio"):
        return dict(
            ref_audio=[it["ref_audio"] for it in items],
            ref_text=[it.get("ref_text") for it in items],
            x_vector_only_mode=xvec_only,
        )
    prompt = [
        VoiceClonePromptItem(
            ref_code=None if only else torch.tensor(it["ref_codes"], dtype=torch.long),
            ref_spk_embedding=torch.tensor(it["x_vector"], dtype=torch.float32),
            x_vector_only_mode=only,
            icl_mode=not only,
            ref_text=it.get("ref_text"),
        )
        for it, only in zip(items, xvec_only, strict=True)
    ]
    return dict(voice_clone_prompt=prompt)


def run_task(tts: Qwen3TTSModel, task: dict) -> dict[str, np.ndarray]:
    """One wrapper call. The task's "items" (default: the task itself) run as one official batch (left-padded);
    outputs are per item, named "<item>/<name>" when there are items."""
    model = tts.model
    talker = model.talker
    items = task.get("items") or [task]
    captured: dict[str, list] = {"logits": [], "prompt": [], "mask": [], "trailing": []}
    codes_out: list = []

    def on_logits(_module, _inputs, output):
        captured["logits"].append(output[:, -1].detach().clone())

    def on_talker(_module, _args, kwargs):
        embeds = kwargs.get("inputs_embeds")
        if embeds is not None and embeds.shape[1] > 1:
            captured["prompt"].append(embeds.detach().clone())
            captured["mask"].append(kwargs["attention_mask"].detach().clone())
            captured["trailing"].append(kwargs["trailing_text_hidden"].detach().clone())

    original_generate = model.generate

    def recording_generate(*args, **kwargs):
        result = original_generate(*args, **kwargs)
        codes_out.append([c.detach().clone() for c in result[0]])
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
        texts = [it["text"] for it in items]
        languages = [it.get("language") or "Auto" for it in items]
        variant = task["variant"]
        if variant == "custom_voice":
            speakers = [it.get("speaker") for it in items]
            instructs = [it.get("instruct") for it in items]
            tts.generate_custom_voice(text=texts, speaker=speakers, language=languages, instruct=instructs, **gen)
        elif variant == "voice_design":
            instructs = [it.get("instruct") or "" for it in items]
            tts.generate_voice_design(text=texts, instruct=instructs, language=languages, **gen)
        elif variant == "base":
            tts.generate_voice_clone(text=texts, language=languages, **voice_clone_voice(items), **gen)
        else:
            raise ValueError(f"unknown variant {variant!r}")
    except (ValueError, NotImplementedError, KeyError) as e:
        return {"error": np.frombuffer(f"{type(e).__name__}: {e}".encode(), dtype=np.uint8)}
    finally:
        for h in hooks:
            h.remove()
        model.generate = original_generate
    logits = torch.stack(captured["logits"], dim=1)  # [B, steps, V]
    prompt, mask, trailing = captured["prompt"][0], captured["mask"][0], captured["trailing"][0]
    outputs = {}
    for b in range(len(items)):
        name = f"{b}/" if "items" in task else ""
        outputs[f"{name}codes"] = codes_out[0][b].to(torch.int64).numpy()
        outputs[f"{name}logits"] = logits[b].float().numpy()
        outputs[f"{name}prompt_embeds"] = prompt[b, mask[b].bool()].float().numpy()  # left padding removed
        outputs[f"{name}trailing"] = trailing[b].float().numpy()  # padded with tts_pad to the batch's longest
    return outputs


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
