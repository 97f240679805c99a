"""Reference runs of the official 12 Hz speech tokenizer (qwen-tts 0.1.1), fp32, eager attention.

A job is {"ops": [op, ...]}, run in order in one process (so a folder saved by one op can be used by the next);
the outputs of op i are stored as "<i>.<name>". Op fields:
  op: "decode"  model: speech_tokenizer dir, codes: list of .npy paths (int64 [T, 16]) -> wav_<i> float32
  op: "encode"  model: speech_tokenizer dir, audio: list of .npy paths (float32 mono @ 24 kHz) -> codes_<i> [T, 16]
  op: "save"    out: dir, seed: int, encoder_config / decoder_config: dicts -> a speech_tokenizer folder written by
                the reference classes' save_pretrained (random weights, see _randomize), plus preprocessor_config.json
"""

import json
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")


def _eager(model):
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None:
            config._attn_implementation = "eager"
    model.config.encoder_config._attn_implementation = "eager"
    model.config.decoder_config._attn_implementation = "eager"


def _load(path):
    from qwen_tts import Qwen3TTSTokenizer

    tok = Qwen3TTSTokenizer.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    _eager(tok.model)
    tok.model.eval()
    return tok


def _randomize(model, seed):
    """Random values with the scales our tiny generator uses, so every part of the decoder matters."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in list(model.state_dict(keep_vars=True).items()):
            leaf = name.rsplit(".", 1)[-1]
            shape = tensor.shape
            if leaf == "initialized":
                value = torch.ones(shape)
            elif leaf == "cluster_usage":
                value = torch.rand(shape, generator=gen) * 1.5 + 0.5
            elif leaf in ("embedding_sum", "embed_sum"):
                value = torch.randn(shape, generator=gen) * 0.5
            elif leaf in ("alpha", "beta"):
                value = torch.randn(shape, generator=gen) * 0.3
            elif leaf == "scale":
                value = torch.rand(shape, generator=gen) * 0.4 + 0.2
            elif leaf == "gamma":
                value = torch.rand(shape, generator=gen) * 0.3 + 0.1
            elif "norm" in name and leaf == "weight":
                value = torch.randn(shape, generator=gen) * 0.1 + 1.0
            elif leaf == "bias":
                value = torch.randn(shape, generator=gen) * 0.02
            elif len(shape) >= 2:
                fan_in = int(np.prod(shape[1:]))
                if ".upsample." in name and ".0.conv." in name:
                    fan_in = shape[0]
                elif ".block.1.conv." in name:
                    fan_in = 2 * shape[0]
                gain = 1.0
                if name.endswith(".conv2.conv.weight"):
                    gain = 0.15
                elif name.endswith("decoder.6.conv.weight"):
                    gain = 0.1
                value = torch.randn(shape, generator=gen) * gain / fan_in**0.5
            else:
                continue
            tensor.copy_(value)


def run_op(job: dict) -> dict:
    out = {}
    if job["op"] == "decode":
        tok = _load(job["model"])
        codes = [torch.from_numpy(np.load(p)).long() for p in job["codes"]]
        wavs, sr = tok.decode([{"audio_codes": c} for c in codes])
        assert sr == 24000
        for i, w in enumerate(wavs):
            out[f"wav_{i}"] = np.asarray(w, dtype=np.float32)
    elif job["op"] == "encode":
        tok = _load(job["model"])
        audio = [np.load(p).astype(np.float32) for p in job["audio"]]
        enc = tok.encode(audio, sr=24000)
        for i, c in enumerate(enc.audio_codes):
            out[f"codes_{i}"] = c.cpu().numpy().astype(np.int64)
    elif job["op"] == "save":
        from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model
        from transformers import EncodecFeatureExtractor

        config = Qwen3TTSTokenizerV2Config(encoder_config=job["encoder_config"], decoder_config=job["decoder_config"])
        torch.manual_seed(job["seed"])
        model = Qwen3TTSTokenizerV2Model(config).eval()
        _randomize(model, job["seed"])
        model.save_pretrained(job["out"])
        EncodecFeatureExtractor(feature_size=1, sampling_rate=24000).save_pretrained(job["out"])
        out["ok"] = np.ones(1)
    else:
        raise ValueError(f"unknown op {job['op']}")
    return out


def main():
    job = json.load(open(sys.argv[1]))
    out = {}
    for i, op in enumerate(job["ops"]):
        out.update({f"{i}.{k}": v for k, v in run_op(op).items()})
    np.savez(sys.argv[2], **out)


if __name__ == "__main__":
    main()
