"""Loading an official Qwen3-TTS model dir: config, talker (+ speaker encoder for Base) and text tokenizer.

Every missing file, unknown key, missing key or wrong shape fails here with a message naming it.
`speech_tokenizer/` (the codec) is loaded by the codec's own loader.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from omni.models.qwen3_tts.config import GenerationConfig, Qwen3TTSConfig, load_config, load_generation_config
from omni.models.qwen3_tts.speaker_encoder import SpeakerEncoder
from omni.models.qwen3_tts.talker import Qwen3TTSTalker
from omni.models.weights import CheckpointError, load_state_strict, read_safetensors, split_prefix

TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")
PREFIXES = ("talker.", "speaker_encoder.")


def check_tokenizer_files(model_dir: Path) -> None:
    for name in TOKENIZER_FILES:
        if not (model_dir / name).exists():
            raise CheckpointError(f"{model_dir}: tokenizer file {name} is missing")


# The pre-tokenizer regex transformers 4.57.3 installs when the official wrapper passes fix_mistral_regex=True.
MISTRAL_FIX_REGEX = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


def official_uses_mistral_regex(config: dict) -> bool:
    """Whether the official wrapper (transformers 4.57.3, `fix_mistral_regex=True`) swaps in the regex above.

    For a local dir it does unless config.json names a transformers version <= 4.57.2 or >= 5.0.0.
    """
    from packaging.version import Version

    written = config.get("transformers_version")
    if not written:
        return True
    return Version("4.57.2") < Version(written) < Version("5.0.0")


class TextTokenizer:
    """The checkpoint's Qwen2 BPE tokenizer (with Qwen3-TTS's special tokens from tokenizer_config.json),
    tokenizing exactly as the official wrapper's processor does."""

    def __init__(self, model_dir: str | Path, config: dict | None = None):
        model_dir = Path(model_dir)
        check_tokenizer_files(model_dir)
        import tokenizers
        from transformers import Qwen2Tokenizer

        self._tok = Qwen2Tokenizer.from_pretrained(str(model_dir))
        config = config if config is not None else json.loads((model_dir / "config.json").read_text())
        if official_uses_mistral_regex(config):
            split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(MISTRAL_FIX_REGEX), behavior="isolated")
            self._tok.backend_tokenizer.pre_tokenizer[0] = split

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special tokens written in the text (e.g. <|im_start|>) map to their ids. The Rust
        tokenizer is called directly: the same ids as the transformers call for one text, without its ~0.1 ms of
        Python per call (the gateway tokenizes every request on its event loop)."""
        return self._tok.backend_tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids)

    def token_id(self, token: str) -> int:
        """The id of one token string; an unknown token is an error, not the unk id."""
        ids = self._tok.convert_tokens_to_ids([token])
        if ids[0] is None or self._tok.convert_ids_to_tokens(ids)[0] != token:
            raise KeyError(f"token {token!r} is not in the vocabulary")
        return ids[0]


@dataclass
class Qwen3TTSModel:
    model_dir: Path
    config: Qwen3TTSConfig
    generation: GenerationConfig
    talker: Qwen3TTSTalker
    speaker_encoder: SpeakerEncoder | None
    tokenizer: TextTokenizer

    @property
    def dtype(self) -> torch.dtype:
        return self.talker.codec_head.weight.dtype


def _build(module_fn, dtype: torch.dtype, device: torch.device | str) -> torch.nn.Module:
    """Build a module without initialising weights (they are all overwritten by the checkpoint)."""
    with torch.device("meta"):
        module = module_fn()
    return module.to(dtype).to_empty(device=device)


def load_qwen3_tts(
    model_dir: str | Path, dtype: torch.dtype | None = None, device: torch.device | str = "cpu"
) -> Qwen3TTSModel:
    """Load config, generation config, talker (+ speaker encoder for Base) and tokenizer from `model_dir`.

    `dtype` None keeps the stored dtype (bf16 for the release); otherwise weights are cast to it.
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise CheckpointError(f"{model_dir}: not a directory")
    config = load_config(model_dir)
    generation = load_generation_config(model_dir)
    check_tokenizer_files(model_dir)  # cheap; the tokenizer itself (seconds) loads once the weights are fine
    tensors = read_safetensors(model_dir)
    strays = sorted(k for k in tensors if not k.startswith(PREFIXES))
    if strays:
        raise CheckpointError(
            f"{model_dir}: unknown keys: {', '.join(strays[:10])}{' ...' if len(strays) > 10 else ''}"
        )
    talker_state = split_prefix(tensors, "talker.")
    stored = talker_state.get("codec_head.weight")
    if stored is None:
        raise CheckpointError(f"{model_dir}: missing keys: talker.codec_head.weight")
    dtype = dtype or stored.dtype

    talker = _build(lambda: Qwen3TTSTalker(config.talker), dtype, device)
    load_state_strict(talker, talker_state, f"{model_dir} talker", dtype=dtype)
    speaker_state = split_prefix(tensors, "speaker_encoder.")
    speaker_encoder = None
    if config.tts_model_type == "base":
        speaker_encoder = SpeakerEncoder(config.speaker_encoder.raw).to(device=device, dtype=dtype)
        load_state_strict(speaker_encoder, speaker_state, f"{model_dir} speaker_encoder", dtype=dtype)
        speaker_encoder.eval()
    elif speaker_state:
        raise CheckpointError(
            f"{model_dir}: unknown keys: speaker_encoder.* in a {config.tts_model_type} model (only Base has one)"
        )
    return Qwen3TTSModel(
        model_dir, config, generation, talker.eval(), speaker_encoder, TextTokenizer(model_dir, config.raw)
    )
