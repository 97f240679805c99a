"""Reference-venv script: the official speaker front end, x-vector and librosa resampling, for parity tests.

Usage: python ref_speaker.py job.json out.npz
job = {"tasks": [{"name": str, "op": str, ...}, ...]}; each task writes arrays named "<name>.<what>":
  mel          {"wav": path.npy}                    -> mel [1, 128, frames] (official `mel_spectrogram`)
  xvector      {"model_dir": dir, "wav": path.npy}  -> xvector [enc_dim] (official `extract_speaker_embedding`)
  save_tiny    {"out_dir": dir, "seed": int}        -> official tiny Base model (§A6) via save_pretrained
  resample     {"wav": path.npy, "sr_in", "sr_out"} -> y (librosa.resample, default res_type soxr_hq)
Several tasks share one process so the heavy qwen_tts import is paid once.
"""

import json
import os
import sys

import numpy as np


def tiny_base_config():
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSConfig

    talker = dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, vocab_size=3072, text_vocab_size=151936, text_hidden_size=32, num_code_groups=16, rope_theta=1e6,
        rope_scaling={"rope_type": "default", "interleaved": True, "mrope_section": [3, 3, 2]},
        codec_bos_id=2149, codec_eos_token_id=2150, codec_pad_id=2148, codec_think_id=2154, codec_nothink_id=2155,
        codec_think_bos_id=2156, codec_think_eos_id=2157,
        codec_language_id={"chinese": 2055, "english": 2050, "beijing_dialect": 2074},
        spk_id={}, spk_is_dialect={},
        code_predictor_config=dict(
            hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=12, vocab_size=2048, num_code_groups=16, rope_theta=1e6,
        ),
    )  # fmt: skip
    speaker = dict(enc_dim=64, enc_channels=[32, 32, 32, 32, 96], enc_attention_channels=16, enc_res2net_scale=4,
                   enc_se_channels=16)  # fmt: skip
    return Qwen3TTSConfig(
        tokenizer_type="qwen3_tts_tokenizer_12hz", tts_model_size="0b6", tts_model_type="base",
        talker_config=talker, speaker_encoder_config=speaker,
    )  # fmt: skip


_MODELS = {}


def load_model(model_dir):
    if model_dir in _MODELS:
        return _MODELS[model_dir]
    import torch
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSConfig
    from qwen_tts.core.models.modeling_qwen3_tts import Qwen3TTSForConditionalGeneration
    from transformers import PreTrainedModel

    with open(os.path.join(model_dir, "config.json")) as f:
        raw = json.load(f)
    # save_pretrained writes "model_type": "" into speaker_encoder_config, which the official sub-config
    # class then rejects on load; drop it (the released config.json has no such key).
    raw.get("speaker_encoder_config", {}).pop("model_type", None)
    config = Qwen3TTSConfig(**{k: v for k, v in raw.items() if k not in ("model_type", "architectures")})

    # The class's own from_pretrained also loads speech_tokenizer/; the speaker encoder does not need it,
    # so the generic transformers loader (same key checks) is used.
    model = PreTrainedModel.from_pretrained.__func__(
        Qwen3TTSForConditionalGeneration,
        model_dir,
        config=config,
        torch_dtype=torch.float32,
        attn_implementation="eager",
    )
    _MODELS[model_dir] = model.eval()
    return _MODELS[model_dir]


def run_task(task, out):
    name, op = task["name"], task["op"]
    if op == "resample":  # librosa only: skips the slow torch / qwen_tts imports
        import librosa

        wav = np.load(task["wav"]).astype(np.float32)
        out[f"{name}.y"] = librosa.resample(y=wav, orig_sr=int(task["sr_in"]), target_sr=int(task["sr_out"]))
        return
    import torch

    if op == "mel":
        from qwen_tts.core.models.modeling_qwen3_tts import mel_spectrogram

        wav = torch.from_numpy(np.load(task["wav"]).astype(np.float32))
        mel = mel_spectrogram(
            wav.unsqueeze(0), n_fft=1024, num_mels=128, sampling_rate=24000, hop_size=256, win_size=1024,
            fmin=0, fmax=12000,
        )  # fmt: skip
        out[f"{name}.mel"] = mel.numpy()
    elif op == "xvector":
        model = load_model(task["model_dir"])
        wav = np.load(task["wav"]).astype(np.float32)
        out[f"{name}.xvector"] = model.extract_speaker_embedding(audio=wav, sr=24000).float().numpy()
    elif op == "save_tiny":
        from qwen_tts.core.models.modeling_qwen3_tts import Qwen3TTSForConditionalGeneration

        torch.manual_seed(task.get("seed", 0))
        config = tiny_base_config()
        config._attn_implementation = "eager"
        model = Qwen3TTSForConditionalGeneration(config)
        # post_init draws N(0, 0.02) weights and zero biases; torch's default init gives the encoder
        # non-trivial biases and activations, so the parity test exercises every term.
        for module in model.speaker_encoder.modules():
            if isinstance(module, torch.nn.Conv1d):
                module.reset_parameters()
        model.save_pretrained(task["out_dir"], safe_serialization=True)
        out[f"{name}.enc_dim"] = np.array(config.speaker_encoder_config.enc_dim)
    else:
        raise ValueError(f"unknown op {op!r}")


def main():
    job_path, out_path = sys.argv[1], sys.argv[2]
    with open(job_path) as f:
        job = json.load(f)
    out = {}
    for task in job["tasks"]:
        run_task(task, out)
    np.savez(out_path, **out)


if __name__ == "__main__":
    main()
