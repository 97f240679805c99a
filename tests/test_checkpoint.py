"""Our tiny checkpoint generator, `omni make-tiny-checkpoint`, and the loader's checks.

The generator's checkpoints must load in the official implementation (`from_pretrained`) with exactly its key
set, and give the same talker / code predictor outputs as our loader; the text tokenizer must tokenize as the
official wrapper's processor does. A broken checkpoint must fail at load with a message naming the problem.
"""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from omni.cli import main as omni_main
from omni.models.qwen3_tts.config import ConfigError, load_config
from omni.models.qwen3_tts.loader import load_qwen3_tts
from omni.models.weights import CheckpointError
from tests.reference import run_reference
from tests.test_talker_model import check_parity, parity_inputs

VARIANTS = ("base", "custom_voice", "voice_design")
TEXTS = [
    "<|im_start|>assistant\nHello, world! It's 12:30.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nSpeak like a calm XMLHttpRequest narrator, don't rush.<|im_end|>\n",
    "你好，世界。こんにちは 123 camelCaseText\n\n  spaced",
]


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory) -> Path:
    """A bf16 voice_design checkpoint written through the command line entry point."""
    out = tmp_path_factory.mktemp("cli") / "tiny_vd"
    omni_main(
        ["make-tiny-checkpoint", "--variant", "voice_design", "--out", str(out), "--seed", "3", "--dtype", "bfloat16"]
    )
    return out


@pytest.fixture(scope="module")
def reference(tiny_model_dir, cli_dir) -> dict:
    tasks = [
        {"action": "forward", "model_dir": str(tiny_model_dir(v)), **parity_inputs(10 + i)}
        for i, v in enumerate(VARIANTS)
    ]
    tasks.append({"action": "forward", "model_dir": str(cli_dir), **parity_inputs(20)})
    tasks.append({"action": "tokenize", "model_dir": str(tiny_model_dir("custom_voice")), "texts": TEXTS})
    return run_reference("ref_talker.py", {"tasks": tasks})


@pytest.mark.parametrize("index", range(len(VARIANTS)))
def test_generator_checkpoint_matches_reference(tiny_model_dir, reference, index):
    model_dir = tiny_model_dir(VARIANTS[index])
    assert list(reference[f"{index}/key_mismatches"]) == [], "reference model keys != our checkpoint keys"
    check_parity(model_dir, reference, str(index), parity_inputs(10 + index))


def test_cli_checkpoint_loads_in_reference_and_ours(cli_dir, reference):
    assert sorted(p.name for p in cli_dir.iterdir()) == [
        "config.json", "generation_config.json", "merges.txt", "model.safetensors", "speech_tokenizer",
        "tokenizer_config.json", "vocab.json",
    ]  # fmt: skip
    assert list(reference["3/key_mismatches"]) == []
    stored = load_qwen3_tts(cli_dir)  # dtype None: as stored
    assert stored.dtype == torch.bfloat16 and stored.config.tts_model_type == "voice_design"
    check_parity(cli_dir, reference, "3", parity_inputs(20))  # both sides upcast the same bf16 weights to fp32


def test_tokenizer_matches_official_processor(tiny_model_dir, reference):
    from tests.test_talker_model import loaded

    tokenizer = loaded(tiny_model_dir("custom_voice")).tokenizer
    for j, text in enumerate(TEXTS):
        assert tokenizer.encode(text) == reference[f"4/ids_{j}"].tolist(), text
    assert [tokenizer.token_id(t) for t in ("<tts_pad>", "<tts_text_bos>", "<tts_text_eod>")] == [
        151671,
        151672,
        151673,
    ]


def test_config_ids_come_from_checkpoint(tiny_model_dir, tmp_path):
    cfg = load_config(tiny_model_dir("custom_voice"))
    t = cfg.talker
    assert (t.codec_pad_id, t.codec_bos_id, t.codec_eos_token_id) == (2148, 2149, 2150)
    assert (t.codec_think_id, t.codec_nothink_id, t.codec_think_bos_id, t.codec_think_eos_id) == (
        2154,
        2155,
        2156,
        2157,
    )
    assert (cfg.tts_pad_token_id, cfg.tts_bos_token_id, cfg.tts_eos_token_id) == (151671, 151672, 151673)
    assert (cfg.im_start_token_id, cfg.im_end_token_id, cfg.assistant_token_id) == (151644, 151645, 77091)
    assert t.spk_is_dialect["dylan"] == "beijing_dialect" and t.spk_id["dylan"] == 2878
    assert t.codec_language_id["english"] == 2050 and t.code_predictor.hidden_size == 48
    # Change ids in config.json: the parsed config follows the file, not any default.
    raw = json.loads((tiny_model_dir("custom_voice") / "config.json").read_text())
    raw["talker_config"]["codec_eos_token_id"] = 2151
    raw["tts_pad_token_id"] = 151670
    (tmp_path / "config.json").write_text(json.dumps(raw))
    cfg = load_config(tmp_path)
    assert cfg.talker.codec_eos_token_id == 2151 and cfg.tts_pad_token_id == 151670


# --- loader errors ---------------------------------------------------------------------------------------------


def copy_checkpoint(src: Path, dst: Path) -> Path:
    """A writable copy; the large read-only files are symlinked."""
    dst.mkdir()
    for f in src.iterdir():
        if f.name in ("vocab.json", "merges.txt", "speech_tokenizer"):
            (dst / f.name).symlink_to(f)
        else:
            shutil.copy(f, dst / f.name)
    return dst


def edit_weights(model_dir: Path, edit) -> None:
    tensors = load_file(str(model_dir / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(model_dir / "model.safetensors"), metadata={"format": "pt"})


def edit_config(model_dir: Path, edit) -> None:
    raw = json.loads((model_dir / "config.json").read_text())
    edit(raw)
    (model_dir / "config.json").write_text(json.dumps(raw))


BROKEN = {
    "no config.json": (lambda d: (d / "config.json").unlink(), "config.json is missing"),
    "no generation_config.json": (
        lambda d: (d / "generation_config.json").unlink(),
        "generation_config.json is missing",
    ),
    "no weights": (lambda d: (d / "model.safetensors").unlink(), "model.safetensors"),
    "no merges.txt": (lambda d: (d / "merges.txt").unlink(), "tokenizer file merges.txt is missing"),
    "no tokenizer_config.json": (
        lambda d: (d / "tokenizer_config.json").unlink(),
        "tokenizer file tokenizer_config.json is missing",
    ),
    "unknown key": (
        lambda d: edit_weights(d, lambda t: t.update({"talker.model.extra.weight": torch.zeros(2)})),
        "unknown keys: model.extra.weight",
    ),
    "stray top-level key": (
        lambda d: edit_weights(d, lambda t: t.update({"thinker.lm_head.weight": torch.zeros(2)})),
        "unknown keys: thinker.lm_head.weight",
    ),
    "missing key": (
        lambda d: edit_weights(d, lambda t: t.pop("talker.model.layers.1.mlp.up_proj.weight")),
        "missing keys: model.layers.1.mlp.up_proj.weight",
    ),
    "wrong shape": (
        lambda d: edit_weights(d, lambda t: t.update({"talker.codec_head.weight": torch.zeros(3072, 65)})),
        "wrong shape for codec_head.weight",
    ),
    "missing config field": (
        lambda d: edit_config(d, lambda c: c["talker_config"].pop("codec_eos_token_id")),
        "missing field 'codec_eos_token_id'",
    ),
    "invalid variant": (
        lambda d: edit_config(d, lambda c: c.update(tts_model_type="singing")),
        "field 'tts_model_type' must be one of",
    ),
    "speaker id outside codec vocab": (
        lambda d: edit_config(d, lambda c: c["talker_config"]["spk_id"].update(vivian=4000)),
        "spk_id['vivian'] = 4000",
    ),
    "speaker encoder keys in custom_voice": (
        lambda d: edit_weights(d, lambda t: t.update({"speaker_encoder.fc.weight": torch.zeros(2)})),
        "speaker_encoder.* in a custom_voice model",
    ),
}


CONFIG_CASES = {
    "no config.json",
    "no generation_config.json",
    "missing config field",
    "invalid variant",
    "speaker id outside codec vocab",
}


@pytest.mark.parametrize("case", BROKEN)
def test_loader_names_the_problem(tiny_model_dir, tmp_path, case):
    model_dir = copy_checkpoint(tiny_model_dir("custom_voice"), tmp_path / "ckpt")
    breakage, message = BROKEN[case]
    breakage(model_dir)
    with pytest.raises(CheckpointError) as info:
        load_qwen3_tts(model_dir)
    assert message in str(info.value), f"{case}: {info.value}"
    if case in CONFIG_CASES:
        assert isinstance(info.value, ConfigError)


def test_sharded_checkpoint_loads_like_single_file(tiny_model_dir, tmp_path):
    model_dir = copy_checkpoint(tiny_model_dir("base"), tmp_path / "ckpt")
    tensors = load_file(str(model_dir / "model.safetensors"))
    (model_dir / "model.safetensors").unlink()
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, str(model_dir / shard), metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {k: shard for shard, keys in shards.items() for k in keys}}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index))
    model = load_qwen3_tts(model_dir)
    assert model.speaker_encoder is not None
    torch.testing.assert_close(model.talker.codec_head.weight, tensors["talker.codec_head.weight"], rtol=0, atol=0)
    torch.testing.assert_close(model.speaker_encoder.fc.weight, tensors["speaker_encoder.fc.weight"], rtol=0, atol=0)
