"""Reference (qwen-tts 0.1.1) side of the talker parity tests; runs in the reference venv.

Usage: python ref_talker.py JOB.json OUT.npz. The job is {"tasks": [...]}, run in order in one process
(importing qwen-tts costs ~10 s, so a test sends all its work at once). Outputs are named "<task index>/<name>".

Tasks:
- {"action": "save", "out_dir", "config": Qwen3TTSConfig kwargs, "seed", "tokenizer_dir",
   "speech_tokenizer_dir" (optional: copied; else a tiny one is written with the reference classes),
   "generation_config": dict}: build Qwen3TTSForConditionalGeneration with random weights and
   `save_pretrained` it, so our loader is tested on files the reference wrote.
- {"action": "forward", "model_dir", "text_ids": [T], "codec_ids": [T], "frame": [16]}: load with
   `from_pretrained` (eager, fp32) and return
     hidden [T, H]: final-normed talker hidden of text_projection(text_embedding) + codec_embedding,
     codec_logits [T, V], frame_embed [H]: the summed 16-codebook embedding of `frame`,
     key_mismatches: checkpoint keys the reference model lacks and vice versa (must be empty),
     predictor_logits [15, 2048]: code predictor logits with the reference's own cache, prefill
       [hidden[-1], E0(frame[0])] then 14 single steps feeding frame[1..14].
- {"action": "tokenize", "model_dir", "texts": [...]}: ids_<j> from the processor as the official wrapper
   loads it (AutoProcessor, fix_mistral_regex=True).
- {"action": "rope", "head_dim", "mrope_section", "theta", "positions": [T], "q": [[B,H,T,D]], "k"}:
   the reference's interleaved M-RoPE with three identical position rows.
"""

import json
import shutil
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model  # noqa: E402
from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration, Qwen3TTSProcessor  # noqa: E402
from qwen_tts.core.models import modeling_qwen3_tts as M  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoConfig, AutoModel, AutoProcessor, DynamicCache, EncodecFeatureExtractor  # noqa: E402

AutoConfig.register("qwen3_tts", Qwen3TTSConfig)
AutoModel.register(Qwen3TTSConfig, Qwen3TTSForConditionalGeneration)
AutoProcessor.register(Qwen3TTSConfig, Qwen3TTSProcessor)

TINY_CODEC = dict(
    encoder_config=dict(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
        intermediate_size=64, num_filters=4, codebook_size=2048, codebook_dim=16,
        vector_quantization_hidden_dimension=16, num_quantizers=16, upsample_groups=32,
    ),
    decoder_config=dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
        intermediate_size=64, latent_dim=64, codebook_dim=32, codebook_size=2048, decoder_dim=64,
        sliding_window=72, num_quantizers=16,
    ),
)  # fmt: skip


def fill_missing(written: dict, given: dict) -> None:
    for key, value in given.items():
        if key not in written:
            written[key] = value
        elif isinstance(value, dict) and isinstance(written[key], dict):
            fill_missing(written[key], value)


def save(task: dict) -> dict:
    out = Path(task["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(task["seed"])
    config = Qwen3TTSConfig(**task["config"])
    model = Qwen3TTSForConditionalGeneration(config).float()
    # Random-init norms are all ones; perturb every parameter so a wrong key or a swapped norm shows.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    model.save_pretrained(str(out), safe_serialization=True)
    # save_pretrained writes only fields that differ from the class defaults; the released config.json
    # carries the token ids too, so add back every field the job gave that the reference left out.
    written = json.loads((out / "config.json").read_text())
    fill_missing(written, task["config"])
    # Its own save_pretrained adds model_type "" to speaker_encoder_config, which its from_pretrained rejects
    # (Qwen3TTSSpeakerEncoderConfig takes no **kwargs); the released config.json has no such field.
    written["speaker_encoder_config"].pop("model_type", None)
    (out / "config.json").write_text(json.dumps(written, indent=2))
    (out / "generation_config.json").write_text(json.dumps(task["generation_config"], indent=2))
    for name in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copy(Path(task["tokenizer_dir"]) / name, out / name)
    st = out / "speech_tokenizer"
    if task.get("speech_tokenizer_dir"):
        shutil.copytree(task["speech_tokenizer_dir"], st, dirs_exist_ok=True)
    else:
        Qwen3TTSTokenizerV2Model(Qwen3TTSTokenizerV2Config(**TINY_CODEC)).save_pretrained(str(st))
        EncodecFeatureExtractor(feature_size=1, sampling_rate=24000).save_pretrained(str(st))
    return {}


@torch.no_grad()
def forward(task: dict) -> dict:
    model = Qwen3TTSForConditionalGeneration.from_pretrained(
        task["model_dir"], attn_implementation="eager", torch_dtype=torch.float32
    )
    model.eval()
    talker = model.talker
    talker.config._attn_implementation = "eager"
    talker.code_predictor.config._attn_implementation = "eager"
    text_ids = torch.tensor([task["text_ids"]])
    codec_ids = torch.tensor([task["codec_ids"]])
    x = talker.text_projection(talker.get_text_embeddings()(text_ids)) + talker.get_input_embeddings()(codec_ids)
    hidden = talker.model(inputs_embeds=x, use_cache=False).last_hidden_state
    logits = talker.codec_head(hidden)

    frame = torch.tensor(task["frame"])
    predictor = talker.code_predictor
    groups = talker.config.num_code_groups
    frame_embed = talker.get_input_embeddings()(frame[:1]).sum(0)
    for q in range(1, groups):
        frame_embed = frame_embed + predictor.get_input_embeddings()[q - 1](frame[q : q + 1]).sum(0)

    cache = DynamicCache()
    prefill = torch.cat([hidden[:, -1:], talker.get_input_embeddings()(frame[None, :1])], dim=1)
    out = predictor(inputs_embeds=prefill, past_key_values=cache, use_cache=True)
    pred_logits = [out.logits[0, -1]]
    steps = out.generation_steps
    for q in range(1, groups - 1):
        out = predictor(
            input_ids=frame[None, q : q + 1],
            past_key_values=out.past_key_values,
            use_cache=True,
            generation_steps=steps,
        )
        steps = out.generation_steps
        pred_logits.append(out.logits[0, -1])
    # Keys the reference model has but the file lacks, or the file has but the model lacks (both must be empty).
    with safe_open(str(Path(task["model_dir"]) / "model.safetensors"), framework="pt") as f:
        file_keys = set(f.keys())
    model_keys = set(model.state_dict())
    mismatched = sorted((model_keys - file_keys) | (file_keys - model_keys))
    return {
        "key_mismatches": np.array(mismatched, dtype=str),
        "hidden": hidden[0].numpy(),
        "codec_logits": logits[0].numpy(),
        "frame_embed": frame_embed.numpy(),
        "predictor_logits": torch.stack(pred_logits).numpy(),
    }


@torch.no_grad()
def rope(task: dict) -> dict:
    cfg = M.Qwen3TTSTalkerConfig(
        hidden_size=task["head_dim"] * 2,
        num_attention_heads=2,
        head_dim=task["head_dim"],
        rope_theta=task["theta"],
        rope_scaling={"rope_type": "default", "interleaved": True, "mrope_section": task["mrope_section"]},
    )
    q = torch.tensor(task["q"], dtype=torch.float32)
    k = torch.tensor(task["k"], dtype=torch.float32)
    positions = torch.tensor(task["positions"])[None, None, :].expand(3, q.shape[0], -1)
    cos, sin = M.Qwen3TTSTalkerRotaryEmbedding(cfg)(q, positions)
    q_out, k_out = M.apply_multimodal_rotary_pos_emb(q, k, cos, sin, task["mrope_section"], True)
    return {"q": q_out.numpy(), "k": k_out.numpy()}


def tokenize(task: dict) -> dict:
    # As the official wrapper loads its processor (qwen3_tts_model.py).
    processor = AutoProcessor.from_pretrained(task["model_dir"], fix_mistral_regex=True)
    return {f"ids_{j}": np.array(processor(text=t)["input_ids"][0]) for j, t in enumerate(task["texts"])}


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    actions = {"save": save, "forward": forward, "rope": rope, "tokenize": tokenize}
    results: dict[str, np.ndarray] = {}
    for i, task in enumerate(job["tasks"]):
        for name, value in actions[task["action"]](task).items():
            results[f"{i}/{name}"] = value
    np.savez(sys.argv[2], **results)


if __name__ == "__main__":
    main()
