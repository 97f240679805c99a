"""Prompt assembly: the exact id layout of every variant and text mode (tts-architectures.md §A1.3-A1.4), and
clear errors for bad requests. Embedding-level equality with the official generate is in
test_generate_parity.py; this file pins the layout itself and needs no weights."""

import dataclasses
import json

import pytest
import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.loader import TextTokenizer
from omni.models.qwen3_tts.tiny import tiny_config, write_tokenizer_files
from omni.talker.prompt import NO_ID, PromptBuilder, PromptError, SpeechRequest

PAD, BOS, EOS = 151671, 151672, 151673  # tts_pad, tts_bos, tts_eos
C_PAD, C_BOS, THINK, NOTHINK, THINK_BOS, THINK_EOS = 2148, 2149, 2154, 2155, 2156, 2157
ROLE = [151644, 77091, 198]  # <|im_start|> assistant \n
ENGLISH, CHINESE, BEIJING, SICHUAN = 2050, 2055, 2074, 2062


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok")
    write_tokenizer_files(path)
    (path / "config.json").write_text(json.dumps(tiny_config("custom_voice")))  # AutoTokenizer reads it
    return TextTokenizer(path)


def builder(tokenizer, variant: str, size: str = "0b6") -> PromptBuilder:
    raw = tiny_config(variant)
    raw["tts_model_size"] = size
    return PromptBuilder(Qwen3TTSConfig.parse(raw), tokenizer.encode)


def body(tokenizer, text: str) -> list[int]:
    ids = tokenizer.encode(f"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n")
    assert ids[:3] == ROLE
    return ids[3:-5]


def xvec(n: int = 64) -> torch.Tensor:
    return torch.randn(n)


def test_custom_voice_non_streaming_layout(tokenizer):
    text = "Hello world."
    p = builder(tokenizer, "custom_voice").build(SpeechRequest(text=text, speaker="Vivian", language="English"))
    b = body(tokenizer, text)
    assert p.text_ids.tolist() == ROLE + [PAD] * 5 + [BOS] + b + [EOS] + [PAD]
    assert p.codec_ids.tolist() == [NO_ID] * 3 + [THINK, THINK_BOS, ENGLISH, THINK_EOS, 3065, C_PAD] + [C_PAD] * (
        len(b) + 1
    ) + [C_BOS]
    assert p.trailing_ids.numel() == 0 and p.non_streaming_mode  # the official CustomVoice default
    assert p.x_vector is None and p.ref_codes is None


def test_streaming_text_puts_the_first_token_in_the_prompt_and_queues_the_rest(tokenizer):
    text = "Hello world, again."
    p = builder(tokenizer, "custom_voice").build(SpeechRequest(text=text, speaker="ryan", non_streaming_mode=False))
    b = body(tokenizer, text)
    # language auto: [nothink, think_bos, think_eos]; speaker; then the first text token with codec_bos.
    assert p.codec_ids.tolist() == [NO_ID] * 3 + [NOTHINK, THINK_BOS, THINK_EOS, 3061, C_PAD, C_BOS]
    assert p.text_ids.tolist() == ROLE + [PAD] * 4 + [BOS, b[0]]
    assert p.trailing_ids.tolist() == b[1:] + [EOS]


@pytest.mark.parametrize(
    ("speaker", "language", "expected"),
    [
        ("Dylan", None, BEIJING),  # auto + dialect speaker: the dialect
        ("Dylan", "Chinese", BEIJING),  # chinese + dialect speaker: the dialect
        ("Eric", "chinese", SICHUAN),
        ("Dylan", "English", ENGLISH),  # any other language wins over the dialect
        ("Vivian", "Chinese", CHINESE),  # not a dialect speaker
    ],
)
def test_dialect_speakers_override_auto_and_chinese(tokenizer, speaker, language, expected):
    p = builder(tokenizer, "custom_voice").build(SpeechRequest(text="你好", speaker=speaker, language=language))
    assert p.codec_ids.tolist()[3:7] == [THINK, THINK_BOS, expected, THINK_EOS]


def test_voice_design_prepends_the_instruction_and_has_no_speaker_slot(tokenizer):
    text, instruct = "Hi.", "A warm voice."
    p = builder(tokenizer, "voice_design").build(SpeechRequest(text=text, instructions=instruct))
    ins = tokenizer.encode(f"<|im_start|>user\n{instruct}<|im_end|>\n")
    n = len(ins)
    assert p.text_ids.tolist()[:n] == ins and p.codec_ids.tolist()[:n] == [NO_ID] * n
    assert p.codec_ids.tolist()[n:] == [NO_ID] * 3 + [NOTHINK, THINK_BOS, THINK_EOS, C_PAD] + [C_PAD] * (
        len(body(tokenizer, text)) + 1
    ) + [C_BOS]


def test_base_x_vector_only_fills_the_speaker_slot(tokenizer):
    v = xvec()
    p = builder(tokenizer, "base").build(
        SpeechRequest(text="Hi there.", x_vector=v, x_vector_only=True, ref_text="ignored")
    )
    assert p.x_vector_pos == 3 + 3 and p.codec_ids[p.x_vector_pos] == NO_ID and p.text_ids[p.x_vector_pos] == PAD
    assert torch.equal(p.x_vector, v) and p.ref_codes is None
    assert not p.non_streaming_mode  # the official Base default
    assert p.codec_ids.tolist()[-2:] == [C_PAD, C_BOS]


def icl_request(tokenizer, text: str, frames: int, **kw) -> SpeechRequest:
    codes = torch.randint(0, 2048, (frames, 16))
    return SpeechRequest(text=text, ref_text="Reference words.", ref_codes=codes, x_vector=xvec(), **kw)


def test_icl_streaming_zips_text_with_codes_and_queues_leftover_text(tokenizer):
    text = "A long target sentence with quite a few tokens in it."
    req = icl_request(tokenizer, text, frames=3)
    p = builder(tokenizer, "base").build(req)
    ref = tokenizer.encode("<|im_start|>assistant\nReference words.<|im_end|>\n")[3:-2]
    full = ref + body(tokenizer, text) + [EOS]
    start = p.ref_codes_pos - 1  # the codec_bos position
    assert p.codec_ids.tolist()[start:] == [C_BOS] + [NO_ID] * 3
    assert p.text_ids.tolist()[start:] == full[:4]
    assert p.trailing_ids.tolist() == full[4:]
    assert torch.equal(p.ref_codes, req.ref_codes) and p.x_vector_pos == 6


def test_icl_streaming_pads_short_text_and_non_streaming_puts_all_text_first(tokenizer):
    b = builder(tokenizer, "base")
    p = b.build(icl_request(tokenizer, "Hi.", frames=20))
    full = len(p.text_ids) - p.ref_codes_pos + 1
    assert full == 21 and p.text_ids.tolist()[-1] == PAD and p.trailing_ids.numel() == 0

    p = b.build(icl_request(tokenizer, "Hi.", frames=4, non_streaming_mode=True))
    ref = tokenizer.encode("<|im_start|>assistant\nReference words.<|im_end|>\n")[3:-2]
    text = ref + body(tokenizer, "Hi.") + [EOS]
    assert p.text_ids.tolist()[-(len(text) + 5) :] == text + [PAD] * 5
    assert p.codec_ids.tolist()[-(len(text) + 5) :] == [C_PAD] * len(text) + [C_BOS] + [NO_ID] * 4
    assert p.ref_codes_pos == len(p) - 4 and p.trailing_ids.numel() == 0


def test_custom_voice_instructions_are_read_by_1b7_models(tokenizer):
    p = builder(tokenizer, "custom_voice", "1b7").build(
        SpeechRequest(text="Hi.", speaker="vivian", instructions="Sad.")
    )
    ins = tokenizer.encode("<|im_start|>user\nSad.<|im_end|>\n")
    assert p.text_ids.tolist()[: len(ins)] == ins


BAD = [
    ("custom_voice", dict(speaker="nobody"), "unknown speaker"),
    ("custom_voice", dict(speaker="vivian", language="klingon"), "unknown language"),
    (
        "custom_voice",
        dict(speaker="vivian", language="sichuan_dialect"),
        "unknown language",
    ),  # dialects are not languages
    ("custom_voice", dict(speaker="vivian", task_type="Base"), "needs a base checkpoint"),
    ("custom_voice", dict(speaker="vivian", task_type="Clone"), "unknown task_type"),
    ("voice_design", dict(task_type="CustomVoice"), "needs a custom_voice checkpoint"),
    ("custom_voice", dict(speaker="vivian", text=""), "text is empty"),
    ("custom_voice", dict(speaker="vivian", text="   \n"), "text is empty"),
    ("custom_voice", dict(speaker="vivian", instructions="Happy."), "0.6B CustomVoice"),
    ("base", dict(x_vector=xvec(), x_vector_only=True, instructions="Happy."), "not supported by Base"),
    ("voice_design", dict(speaker="vivian"), "speaker is only for CustomVoice"),
    ("base", dict(speaker="vivian", x_vector=xvec(), x_vector_only=True), "speaker is only for CustomVoice"),
    ("custom_voice", dict(speaker="vivian", ref_text="Hello."), "only for Base"),
    ("base", dict(ref_text="Hello."), "ref_text was given without ref_audio"),
    ("base", dict(), "needs ref_audio"),
    ("base", dict(x_vector=xvec(), ref_codes=torch.zeros(3, 16, dtype=torch.long)), "ref_text is required"),
    ("base", dict(x_vector=xvec(10), x_vector_only=True), "x-vector has 10 values"),
    ("base", dict(x_vector=xvec(), ref_text="Hi.", ref_codes=torch.zeros(3, 8, dtype=torch.long)), "reference codes"),
    ("base", dict(x_vector=xvec(), ref_text="Hi.", ref_codes=torch.full((3, 16), 2048)), "reference codes must lie"),
]


@pytest.mark.parametrize(("variant", "fields", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_requests_raise_clear_value_errors(tokenizer, variant, fields, message):
    request = dataclasses.replace(SpeechRequest(text="Hello."), **fields)
    with pytest.raises(PromptError, match=message) as info:
        builder(tokenizer, variant).build(request)
    assert isinstance(info.value, ValueError)


def test_the_tokenizer_must_know_the_chat_special_tokens(tokenizer):
    with pytest.raises(PromptError, match="special tokens"):
        PromptBuilder(Qwen3TTSConfig.parse(tiny_config("custom_voice")), lambda text: [1, 2, 3, 4, 5])


@pytest.mark.parametrize(
    "text",
    [
        "Hello world.",
        "<|im_start|>assistant\nA line.<|im_end|>\n<|im_start|>assistant\n",  # special tokens written in the text
        "中文测试，你好！ Ünïcödé — “quotes” 😀 ... 1,234.5 km/h",
        "  leading,   repeated   and trailing spaces  \n\ttabs",
        "",
    ],
)
def test_encode_gives_the_ids_of_the_transformers_tokenizer_call(tokenizer, text):
    # encode() calls the Rust tokenizer directly (the transformers call costs ~0.1 ms of Python per request in the
    # gateway); its ids must be the call's, which test_generate_parity ties to the official processor.
    assert tokenizer.encode(text) == list(tokenizer._tok(text, add_special_tokens=False)["input_ids"])
