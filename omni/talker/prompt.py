"""Request -> talker prompt, as ids (the talker embeds them; the gateway will build them one day).

The layout is the official `Qwen3TTSForConditionalGeneration.generate` (+ `generate_icl_prompt`) and
the text templates of the official wrapper (`inference/qwen3_tts_model.py`); see
tts-architectures.md §A1.3-A1.4. Every prompt position is the sum of an optional text-track vector
P(text_id) and an optional codec-track vector: C(codec_id), the x-vector, or the sum of the 16
codebook embeddings of one reference-code row.

    [instruct text]  [role: <|im_start|> assistant \\n]  [control prefix (+ speaker slot)]  [text part]

Validation follows the official wrapper (languages, speakers, ref_text for ICL) and adds clear errors
where the official code would crash or silently ignore the input.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig

NO_ID = -1  # "no term on this track at this position"

# Request task types (the vLLM-Omni names) and the checkpoint variant each one needs.
TASK_TYPES = {"CustomVoice": "custom_voice", "VoiceDesign": "voice_design", "Base": "base"}
VARIANT_TASK = {v: k for k, v in TASK_TYPES.items()}
# The official wrapper's non_streaming_mode default per variant (qwen3_tts_model.py:478,642,738).
DEFAULT_NON_STREAMING = {"custom_voice": True, "voice_design": True, "base": False}


class PromptError(ValueError):
    """A request that cannot be turned into a prompt; the message says why."""


@dataclass
class SpeechRequest:
    """One synthesis request, after reference audio has been turned into codes and an x-vector."""

    text: str
    task_type: str | None = None  # CustomVoice | VoiceDesign | Base; None = the checkpoint's variant
    language: str | None = None  # None = "auto"
    speaker: str | None = None  # CustomVoice only
    instructions: str | None = None  # VoiceDesign, and CustomVoice on models that read them
    ref_text: str | None = None  # Base ICL: transcript of the reference audio
    ref_codes: torch.Tensor | None = None  # Base ICL: [T_ref, 16] codec codes of the reference audio
    x_vector: torch.Tensor | None = None  # Base: [hidden] speaker embedding of the reference audio
    x_vector_only: bool = False  # Base: clone from the x-vector alone (no ICL codes / ref_text)
    non_streaming_mode: bool | None = None  # None = the official default for the variant


@dataclass
class TalkerPrompt:
    """Per-position ids of the two tracks plus the non-id codec terms, and the trailing text queue.

    text_ids[i] / codec_ids[i] are NO_ID where that track has no term. Positions
    ref_codes_pos .. ref_codes_pos+len(ref_codes)-1 take the summed embeddings of the ref-code rows;
    position x_vector_pos takes the x-vector. trailing_ids are text ids added one per generated frame;
    after them (or from the start, if empty) every frame gets tts_pad.
    """

    text_ids: torch.Tensor  # [L] int64
    codec_ids: torch.Tensor  # [L] int64
    trailing_ids: torch.Tensor  # [M] int64
    x_vector: torch.Tensor | None = None  # [hidden] float
    x_vector_pos: int = NO_ID
    ref_codes: torch.Tensor | None = None  # [T_ref, 16] int64
    ref_codes_pos: int = NO_ID
    non_streaming_mode: bool = False
    meta: dict = field(default_factory=dict)  # what was resolved (variant, language id, speaker), for logs

    def __len__(self) -> int:
        return int(self.text_ids.shape[0])


class PromptBuilder:
    """Builds TalkerPrompts for one checkpoint. Token ids come from its config, never from defaults."""

    def __init__(self, config: Qwen3TTSConfig, tokenize: Callable[[str], list[int]]):
        self.config = config
        self.tokenize = tokenize
        t = config.talker
        self.languages = {name.lower(): i for name, i in t.codec_language_id.items()}
        # As the official model: "auto" plus every language that is not a dialect.
        self.supported_languages = ["auto"] + sorted(n for n in self.languages if "dialect" not in n)
        self.speakers = {name.lower(): i for name, i in t.spk_id.items()}
        self.dialects = {name.lower(): d for name, d in t.spk_is_dialect.items()}
        self.role_ids = self._tokens("<|im_start|>assistant\n")
        if len(self.role_ids) != 3 or self.role_ids[0] != config.im_start_token_id:
            raise PromptError(
                f"the tokenizer splits '<|im_start|>assistant\\n' into {self.role_ids}; expected "
                f"[{config.im_start_token_id}, assistant, newline] (are the special tokens registered?)"
            )

    def _tokens(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenize(text)]

    def build(self, request: SpeechRequest) -> TalkerPrompt:
        cfg, t = self.config, self.config.talker
        variant = self._check_task(request)
        language = (request.language or "auto").lower()
        if language not in self.supported_languages:
            raise PromptError(f"unknown language {request.language!r}; supported: {self.supported_languages}")
        if not request.text or not request.text.strip():
            raise PromptError("text is empty")
        speaker = self._check_speaker(request, variant)
        instruct = self._check_instructions(request, variant)
        icl = self._check_reference(request, variant)
        non_streaming = request.non_streaming_mode
        if non_streaming is None:
            non_streaming = DEFAULT_NON_STREAMING[variant]

        # Target text: <|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n; body = ids[3:-5].
        target = self._tokens(f"<|im_start|>assistant\n{request.text}<|im_end|>\n<|im_start|>assistant\n")
        body = target[3:-5]
        if not body:
            raise PromptError("text is empty after tokenization")

        text_ids: list[int] = []
        codec_ids: list[int] = []

        def add(text_id: int, codec_id: int) -> None:
            text_ids.append(text_id)
            codec_ids.append(codec_id)

        if instruct:
            for i in self._tokens(f"<|im_start|>user\n{instruct}<|im_end|>\n"):
                add(i, NO_ID)
        for i in target[:3]:
            add(i, NO_ID)

        # Control prefix: codec [think, think_bos, lang, think_eos] (auto: [nothink, think_bos, think_eos]),
        # then the speaker slot, then [pad, bos]; all but the last go in, text is tts_pad... tts_bos.
        language_id = None if language == "auto" else self.languages[language]
        dialect = self.dialects.get(speaker, False) if speaker else False
        if language in ("chinese", "auto") and dialect is not False:
            language_id = t.codec_language_id[dialect]
        if language_id is None:
            control = [t.codec_nothink_id, t.codec_think_bos_id, t.codec_think_eos_id]
        else:
            control = [t.codec_think_id, t.codec_think_bos_id, language_id, t.codec_think_eos_id]
        x_vector_pos = NO_ID
        if speaker:
            control.append(self.speakers[speaker])
        elif variant == "base":
            x_vector_pos = len(text_ids) + len(control)
            control.append(NO_ID)  # the x-vector takes this codec slot
        control += [t.codec_pad_id, t.codec_bos_id]
        prefix = control[:-1]
        for k, codec_id in enumerate(prefix):
            add(cfg.tts_bos_token_id if k == len(prefix) - 1 else cfg.tts_pad_token_id, codec_id)

        ref_codes = None
        ref_codes_pos = NO_ID
        trailing: list[int] = []
        if icl:
            # ICL: text = ref body ‖ target body ‖ tts_eos; codec = [bos] ‖ one row per reference frame.
            ref_ids = self._tokens(f"<|im_start|>assistant\n{request.ref_text}<|im_end|>\n")[3:-2]
            text = ref_ids + body + [cfg.tts_eos_token_id]
            ref_codes = request.ref_codes.to(torch.int64).contiguous()
            codec_len = 1 + int(ref_codes.shape[0])
            if non_streaming:
                for i in text:
                    add(i, t.codec_pad_id)
                ref_codes_pos = len(text_ids) + 1
                add(cfg.tts_pad_token_id, t.codec_bos_id)
                for _ in range(codec_len - 1):
                    add(cfg.tts_pad_token_id, NO_ID)
            else:
                # The two tracks are zipped; leftover text becomes the trailing queue, short text is padded.
                ref_codes_pos = len(text_ids) + 1
                zipped = text[:codec_len] + [cfg.tts_pad_token_id] * max(0, codec_len - len(text))
                trailing = text[codec_len:]
                add(zipped[0], t.codec_bos_id)
                for i in zipped[1:]:
                    add(i, NO_ID)
        elif non_streaming:
            # The whole text with codec_pad, then tts_eos+pad, then tts_pad+bos.
            for i in body + [cfg.tts_eos_token_id]:
                add(i, t.codec_pad_id)
            add(cfg.tts_pad_token_id, t.codec_bos_id)
        else:
            # Simulated streaming text: the first token with codec_bos, the rest (+ tts_eos) one per frame.
            add(body[0], t.codec_bos_id)
            trailing = body[1:] + [cfg.tts_eos_token_id]

        x_vector = None
        if x_vector_pos != NO_ID:
            x_vector = request.x_vector.to(torch.float32).reshape(-1)
        return TalkerPrompt(
            text_ids=torch.tensor(text_ids, dtype=torch.int64),
            codec_ids=torch.tensor(codec_ids, dtype=torch.int64),
            trailing_ids=torch.tensor(trailing, dtype=torch.int64),
            x_vector=x_vector,
            x_vector_pos=x_vector_pos,
            ref_codes=ref_codes,
            ref_codes_pos=ref_codes_pos,
            non_streaming_mode=non_streaming,
            meta={"variant": variant, "language": language, "language_id": language_id, "speaker": speaker},
        )

    def _check_task(self, request: SpeechRequest) -> str:
        variant = self.config.tts_model_type
        if request.task_type is None:
            return variant
        if request.task_type not in TASK_TYPES:
            raise PromptError(f"unknown task_type {request.task_type!r}; expected one of {sorted(TASK_TYPES)}")
        if TASK_TYPES[request.task_type] != variant:
            raise PromptError(
                f"task_type {request.task_type} needs a {TASK_TYPES[request.task_type]} checkpoint, "
                f"but this model is {variant} (task_type {VARIANT_TASK[variant]})"
            )
        return variant

    def _check_speaker(self, request: SpeechRequest, variant: str) -> str | None:
        if not request.speaker:
            # CustomVoice without a speaker is allowed by the official code: no speaker slot.
            return None
        if variant != "custom_voice":
            raise PromptError(f"speaker is only for CustomVoice models; this model is {VARIANT_TASK[variant]}")
        speaker = request.speaker.lower()
        if speaker not in self.speakers:
            raise PromptError(f"unknown speaker {request.speaker!r}; supported: {sorted(self.speakers)}")
        return speaker

    def _check_instructions(self, request: SpeechRequest, variant: str) -> str | None:
        if not request.instructions:
            return None
        # The official code ignores instructions silently in these two cases (Base: generate_voice_clone has
        # no instruct parameter; 0.6B CustomVoice: the wrapper drops them). We refuse instead of ignoring.
        if variant == "base":
            raise PromptError(
                "instructions are not supported by Base (voice clone) models; the official code ignores them"
            )
        if variant == "custom_voice" and self.config.tts_model_size in "0b6":
            raise PromptError(
                "instructions are not supported by the 0.6B CustomVoice model; the official code ignores them"
            )
        return request.instructions

    def _check_reference(self, request: SpeechRequest, variant: str) -> bool:
        """Validates the voice-clone inputs; returns whether the prompt is ICL."""
        has_audio = request.x_vector is not None or request.ref_codes is not None
        if variant != "base":
            if has_audio or request.ref_text or request.x_vector_only:
                raise PromptError(f"ref_audio / ref_text / x_vector_only are only for Base models, not {variant}")
            return False
        if request.ref_text and not has_audio:
            raise PromptError("ref_text was given without ref_audio")
        if request.x_vector is None:
            raise PromptError("Base (voice clone) needs ref_audio (its x-vector)")
        hidden = self.config.talker.hidden_size
        if request.x_vector.numel() != hidden:
            raise PromptError(f"x-vector has {request.x_vector.numel()} values; this model needs {hidden}")
        if request.x_vector_only:
            return False  # the official code ignores ref_text and ref codes in x-vector-only mode
        if not request.ref_text:
            raise PromptError("ref_text is required for voice cloning with ICL (or use x_vector_only)")
        codes = request.ref_codes
        groups = self.config.talker.num_code_groups
        if codes is None or codes.dim() != 2 or codes.shape[1] != groups or codes.shape[0] == 0:
            shape = None if codes is None else tuple(codes.shape)
            raise PromptError(f"ICL needs reference codes of shape [frames>0, {groups}], got {shape}")
        if int(codes.min()) < 0 or int(codes.max()) >= self.config.code_predictor.vocab_size:
            raise PromptError(f"reference codes must lie in [0, {self.config.code_predictor.vocab_size})")
        return True
