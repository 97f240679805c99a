"""Codec encoder (transformers' Mimi with the official weights) against qwen-tts 0.1.1, and the encode/decode CLI.

Audio is synthesized speech-like signal: a glottal pulse train with a wandering pitch through two formant
resonators that change every 200 ms, unvoiced noise segments, a syllable-rate envelope and pauses.
"""

import io

import numpy as np
import pytest
import soundfile as sf
import torch
from scipy.signal import lfilter

from omni.audio import prepare_reference_audio
from omni.cli import main as omni_main
from omni.models.qwen3_tts.codec import load_codec_decoder
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER, TINY_ENCODER, write_tiny_speech_tokenizer
from omni.models.qwen3_tts.codec_encoder import CodecEncoder
from tests.reference import run_reference

SR = 24000


def speech_like(seconds: float, seed: int, sr: int = SR) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    f0 = 110 + 40 * rng.random() + 25 * np.sin(2 * np.pi * 0.8 * t + rng.random() * 6)
    pulses = np.sign(np.sin(2 * np.pi * np.cumsum(f0) / sr)) * 0.5
    out = np.zeros(n)
    segment = sr // 5
    for start in range(0, n, segment):
        voiced = rng.random() < 0.75
        x = pulses[start : start + segment] if voiced else rng.standard_normal(min(segment, n - start)) * 0.3
        for f, bw in ((rng.uniform(300, 900), 80.0), (rng.uniform(900, 2600), 120.0)):
            r = np.exp(-np.pi * bw / sr)
            x = lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * f / sr), r * r], x)
        out[start : start + segment] = x
    out *= 0.3 + 0.7 * np.sin(2 * np.pi * 2.5 * t) ** 2  # syllables
    out[int(0.45 * n) : int(0.5 * n)] = 0.0  # a pause
    return (0.4 * out / np.abs(out).max()).astype(np.float32)


# 2.3 s and 1.37 s: neither is a whole number of 1920-sample frames, so the ceil trim is exercised.
AUDIO = [speech_like(2.3, seed=0), speech_like(1.37, seed=1)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("enc")
    ours = write_tiny_speech_tokenizer(root / "ours", seed=0)
    theirs = root / "reference"
    files = []
    for i, wav in enumerate(AUDIO):
        np.save(root / f"a{i}.npy", wav)
        files.append(str(root / f"a{i}.npy"))
    save = {"op": "save", "out": str(theirs), "seed": 7, "encoder_config": TINY_ENCODER, "decoder_config": TINY_DECODER}
    # One utterance per op: a batch would be zero-padded to its longest member, changing the last frame's input.
    ops = [save] + [{"op": "encode", "model": str(m), "audio": [f]} for m in (ours, theirs) for f in files]
    out = run_reference("ref_codec.py", {"ops": ops})
    ref = {
        "ours": [out["1.codes_0"], out["2.codes_0"]],
        "reference": [out["3.codes_0"], out["4.codes_0"]],
    }
    return {"ours": ours, "reference": theirs}, ref


@pytest.mark.parametrize("which", ["ours", "reference"])
def test_codes_equal_reference(setup, which):
    dirs, ref = setup
    encoder = CodecEncoder.from_pretrained(dirs[which])
    for wav, want in zip(AUDIO, ref[which], strict=True):
        codes = encoder.encode(wav)
        assert codes.dtype == torch.int64
        assert codes.shape == want.shape == (-(-len(wav) // 1920), 16)
        assert np.array_equal(codes.numpy(), want)
        assert len(np.unique(want[:, 0])) > 3 and len(np.unique(want[:, 15])) > 3  # real variety, not a constant


def test_encode_rejects_bad_audio(setup):
    encoder = CodecEncoder.from_pretrained(setup[0]["ours"])
    with pytest.raises(ValueError, match="mono"):
        encoder.encode(np.zeros((2, 4800), dtype=np.float32))
    with pytest.raises(ValueError, match="mono"):
        encoder.encode(np.zeros(0, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        encoder.encode(np.full(4800, np.nan, dtype=np.float32))


def test_cli_encode_then_decode(setup, tmp_path, capsys):
    model = setup[0]["ours"]
    # A 16 kHz stereo file: the front end down-mixes and resamples to 24 kHz before encoding.
    stereo = np.stack([speech_like(1.5, seed=2, sr=16000), speech_like(1.5, seed=3, sr=16000)], axis=1)
    audio = tmp_path / "in.wav"
    sf.write(audio, stereo, 16000, subtype="FLOAT")
    codes_path = tmp_path / "codes.npy"
    omni_main(["encode", "--model", str(model), "--audio", str(audio), "--out", str(codes_path)])
    codes = np.load(codes_path)
    want = CodecEncoder.from_pretrained(model).encode(prepare_reference_audio(audio.read_bytes())).numpy()
    assert codes.dtype == np.int64 and np.array_equal(codes, want) and codes.shape == (19, 16)

    whole, chunked = tmp_path / "whole.wav", tmp_path / "chunked.wav"
    omni_main(["decode", "--model", str(model), "--codes", str(codes_path), "--out", str(whole)])
    omni_main(["decode", "--model", str(model), "--codes", str(codes_path), "--out", str(chunked), "--chunks", "1,4"])
    a, sr_a = sf.read(whole, dtype="float32")
    b, sr_b = sf.read(chunked, dtype="float32")
    assert sr_a == sr_b == SR and a.shape == b.shape == (19 * 1920,)
    direct = load_codec_decoder(model).decode(torch.from_numpy(codes)[None])[0].numpy()
    assert np.abs(a - direct).max() == 0.0 and np.abs(b - a).max() < 1e-5
    assert "19 frames" in capsys.readouterr().out


def test_cli_errors_are_clear(setup, tmp_path):
    model = str(setup[0]["ours"])
    silent = io.BytesIO()
    sf.write(silent, np.zeros(SR * 2, dtype=np.float32), SR, format="WAV")
    (tmp_path / "silent.wav").write_bytes(silent.getvalue())
    with pytest.raises(SystemExit, match="silent"):
        omni_main(
            ["encode", "--model", model, "--audio", str(tmp_path / "silent.wav"), "--out", str(tmp_path / "x.npy")]
        )
    np.save(tmp_path / "bad.npy", np.zeros((4, 8), dtype=np.int64))
    with pytest.raises(SystemExit, match=r"\[frames, 16\]"):
        omni_main(["decode", "--model", model, "--codes", str(tmp_path / "bad.npy"), "--out", str(tmp_path / "x.wav")])
    np.save(tmp_path / "big.npy", np.full((4, 16), 5000, dtype=np.int64))
    with pytest.raises(SystemExit, match="2048"):
        omni_main(["decode", "--model", model, "--codes", str(tmp_path / "big.npy"), "--out", str(tmp_path / "x.wav")])
    with pytest.raises(SystemExit):  # argparse: bad --chunks
        omni_main(["decode", "--model", model, "--codes", "c.npy", "--out", "x.wav", "--chunks", "0,2"])
