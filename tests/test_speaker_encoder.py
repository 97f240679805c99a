"""Speaker encoder parity with the official qwen-tts: mel front end, module keys, x-vector (fp32)."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from omni.audio import prepare_reference_audio
from omni.models.qwen3_tts.speaker_encoder import (
    EcapaConfig,
    SpeakerEncoder,
    extract_xvector,
    load_speaker_encoder,
    mel_spectrogram,
)
from omni.models.weights import CheckpointError, read_safetensors, split_prefix
from tests.reference import run_reference
from tests.speech import espeak_wav

TINY = dict(enc_dim=64, enc_channels=[32, 32, 32, 32, 96], enc_attention_channels=16, enc_res2net_scale=4,
            enc_se_channels=16)  # fmt: skip


def _waves() -> dict[str, np.ndarray]:
    """Two different 24 kHz voices: espeak-ng speech, and a noisy harmonic sweep (different speaker statistics)."""
    speech = prepare_reference_audio(espeak_wav("The quick brown fox jumps over the lazy dog.", voice="en"))
    t = np.arange(int(1.3 * 24000)) / 24000
    sweep = 0.3 * np.sin(2 * np.pi * (120 * t + 80 * t**2)) + 0.1 * np.sin(2 * np.pi * 2000 * t)
    sweep += 0.01 * np.random.default_rng(0).standard_normal(t.shape)
    return {"speech": speech, "sweep": sweep.astype(np.float32)}


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir) -> dict:
    """One reference-venv run (its import costs most of the time): a tiny Base checkpoint saved by the
    official `save_pretrained`, and the official mel and x-vectors of each test wave on that checkpoint
    and on the one our generator writes."""
    tmp = tmp_path_factory.mktemp("speaker")
    waves = _waves()
    dirs = {"ref": tmp / "ref_tiny_base", "gen": tiny_model_dir("base")}
    tasks: list[dict] = [{"name": "save", "op": "save_tiny", "out_dir": str(dirs["ref"]), "seed": 0}]
    for name, wav in waves.items():
        path = str(tmp / f"{name}.npy")
        np.save(path, wav)
        tasks.append({"name": f"mel_{name}", "op": "mel", "wav": path})
        for which, model_dir in dirs.items():
            tasks.append({"name": f"xv_{which}_{name}", "op": "xvector", "model_dir": str(model_dir), "wav": path})
    out = run_reference("ref_speaker.py", {"tasks": tasks})
    return {"waves": waves, "ref_dir": dirs["ref"], "dirs": dirs, "out": out}


def test_mel_matches_reference(parity: dict) -> None:
    for name, wav in parity["waves"].items():
        ours = mel_spectrogram(torch.from_numpy(wav)).numpy()
        ref = parity["out"][f"mel_{name}.mel"]
        # center=False after a 384-sample reflect pad on each side: one frame per 256-sample hop.
        assert ours.shape == ref.shape == (1, 128, (len(wav) - 256) // 256 + 1)
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-5)


def test_module_keys_and_shapes_equal_checkpoint(parity: dict) -> None:
    config = json.loads((parity["ref_dir"] / "config.json").read_text())
    ours = SpeakerEncoder(config["speaker_encoder_config"]).state_dict()
    ckpt = split_prefix(read_safetensors(parity["ref_dir"]), "speaker_encoder.")
    assert sorted(ours) == sorted(ckpt)
    assert all(tuple(ours[k].shape) == tuple(ckpt[k].shape) for k in ours)


@pytest.mark.parametrize("which", ["ref", "gen"])
def test_xvector_matches_reference(parity: dict, which: str) -> None:
    """On the official save_pretrained checkpoint and on our generator's (tiny_model_dir("base"))."""
    encoder = load_speaker_encoder(parity["dirs"][which])
    xvectors = {}
    for name, wav in parity["waves"].items():
        ours = extract_xvector(encoder, wav)
        ref = parity["out"][f"xv_{which}_{name}.xvector"]
        assert ours.shape == (64,) and ours.dtype == torch.float32
        np.testing.assert_allclose(ours.numpy(), ref, rtol=0, atol=1e-4 * np.abs(ref).max())
        xvectors[name] = ours
    # Different audio gives a clearly different x-vector (the parity above is not between constants).
    diff = (xvectors["speech"] - xvectors["sweep"]).abs().max()
    assert diff > 0.05 * xvectors["speech"].abs().max()


def test_batched_forward_equals_single(parity: dict) -> None:
    encoder = load_speaker_encoder(parity["ref_dir"])
    wav = parity["waves"]["speech"]
    pieces = torch.stack([torch.from_numpy(wav[:24000]), torch.from_numpy(wav[12000:36000])])
    with torch.inference_mode():
        batched = encoder(mel_spectrogram(pieces).transpose(1, 2))
    for i in range(2):
        np.testing.assert_allclose(batched[i].numpy(), extract_xvector(encoder, pieces[i]).numpy(), atol=1e-5)


def test_bad_inputs_raise(parity: dict, tmp_path: Path) -> None:
    encoder = SpeakerEncoder(EcapaConfig(**TINY))
    with pytest.raises(ValueError, match="mono"):
        extract_xvector(encoder, np.zeros((2, 24000), dtype=np.float32))
    with pytest.raises(ValueError, match="too short"):
        extract_xvector(encoder, np.zeros(100, dtype=np.float32))
    with pytest.raises(ValueError, match="sum of the SE-Res2Net channels"):
        EcapaConfig(**{**TINY, "enc_channels": [32, 32, 32, 32, 64]})
    with pytest.raises(ValueError, match="same length"):
        EcapaConfig(**{**TINY, "enc_kernel_sizes": [5, 3, 3]})
    # A checkpoint whose speaker encoder does not fit the config fails naming the key.
    config = json.loads((parity["ref_dir"] / "config.json").read_text())
    config["speaker_encoder_config"]["enc_dim"] = 32
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(config))
    (bad / "model.safetensors").symlink_to(parity["ref_dir"] / "model.safetensors")
    with pytest.raises(CheckpointError, match="fc.weight"):
        load_speaker_encoder(bad)
    config["tts_model_type"] = "custom_voice"
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="no speaker encoder"):
        load_speaker_encoder(bad)
