"""`omni synth`: greedy codes equal the official generate (through the real CLI and the runner), the WAV and
codes files it writes, seeded sampling, and clear errors for bad input.

Base cloning reads a stereo reference WAV: the reference wrapper gets the same file and does its own
audio loading, codec encoding and x-vector extraction, so the whole chain is compared.
"""

import numpy as np
import pytest
import soundfile as sf

from omni.cli import main
from tests.reference import run_reference

FRAMES = 40
pytestmark = pytest.mark.timeout(1200)  # one reference process (~30 s of CPU); generous for a busy shared box
TEXT = "Good morning, this is a small test of the offline path."


def synth(model_dir, tmp_path, name: str, *args: str) -> tuple[int, np.ndarray | None]:
    """Run `omni synth` in-process; returns (exit code, codes or None)."""
    codes = tmp_path / f"{name}.npy"
    try:
        main(
            [
                "synth",
                "--model",
                str(model_dir),
                "--out",
                str(tmp_path / f"{name}.wav"),
                "--codes-out",
                str(codes),
                *args,
            ]
        )
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    return code, (np.load(codes) if codes.exists() else None)


@pytest.fixture(scope="module")
def reference_audio(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref_audio") / "voice.wav"
    rng = np.random.default_rng(3)
    t = np.arange(int(1.6 * 24000)) / 24000
    left = 0.3 * np.sin(2 * np.pi * 180 * t) + 0.02 * rng.standard_normal(t.size)
    right = 0.2 * np.sin(2 * np.pi * 260 * t) + 0.02 * rng.standard_normal(t.size)
    sf.write(path, np.stack([left, right], axis=1).astype(np.float32), 24000, subtype="FLOAT")
    return path


@pytest.fixture(scope="module")
def reference(tiny_model_dir, reference_audio):
    cv, base = tiny_model_dir("custom_voice"), tiny_model_dir("base")
    common = {"max_new_tokens": FRAMES + 1, "greedy": True}
    tasks = [
        {"model_dir": str(cv), "variant": "custom_voice", "text": TEXT, "speaker": "Eric", "language": "English",
         **common},
        {"model_dir": str(base), "variant": "base", **common, "items": [
            {"text": TEXT, "ref_audio": str(reference_audio), "ref_text": "A humming voice."},
            {"text": TEXT, "ref_audio": str(reference_audio), "x_vector_only": True},
        ]},
    ]  # fmt: skip
    return run_reference("ref_generate.py", {"tasks": tasks})


def test_custom_voice_greedy_codes_equal_reference_and_files_are_written(tiny_model_dir, reference, tmp_path):
    frames = str(FRAMES)
    code, codes = synth(tiny_model_dir("custom_voice"), tmp_path, "cv", "--text", TEXT, "--speaker", "Eric",
                        "--language", "English", "--greedy", "--max-frames", frames)  # fmt: skip
    assert code == 0
    assert codes.dtype == np.int64 and codes.shape == (FRAMES, 16)
    np.testing.assert_array_equal(codes, reference["0/codes"])
    audio, sr = sf.read(tmp_path / "cv.wav")
    assert sr == 24000 and audio.ndim == 1 and audio.shape[0] == FRAMES * 1920 and np.abs(audio).max() > 0


@pytest.mark.parametrize(("index", "mode"), [(0, ["--ref-text", "A humming voice."]), (1, ["--x-vector-only"])])
def test_base_cloning_from_a_reference_file_equals_reference(
    tiny_model_dir, reference, reference_audio, tmp_path, index, mode
):
    args = ["--text", TEXT, "--ref-audio", str(reference_audio), *mode, "--greedy", "--max-frames", str(FRAMES)]
    code, codes = synth(tiny_model_dir("base"), tmp_path, "base", *args)
    assert code == 0
    np.testing.assert_array_equal(codes, reference[f"1/{index}/codes"])
    assert sf.info(str(tmp_path / "base.wav")).frames == FRAMES * 1920  # the reference's share is cut off


def test_seeded_sampling_is_reproducible_from_the_command_line(tiny_model_dir, tmp_path):
    model = tiny_model_dir("custom_voice")
    args = ["--text", "Hi.", "--speaker", "vivian", "--max-frames", "6"]
    runs = [synth(model, tmp_path, f"s{i}", *args, "--seed", seed)[1] for i, seed in enumerate(["5", "5", "6"])]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0].shape == (6, 16) and not np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize(
    ("variant", "args", "message"),
    [
        ("custom_voice", ["--text", "Hi.", "--speaker", "nobody"], "unknown speaker"),
        ("custom_voice", ["--text", "Hi.", "--language", "klingon"], "unknown language"),
        ("custom_voice", ["--text", "  "], "text is empty"),
        ("custom_voice", ["--text", "Hi.", "--task-type", "VoiceDesign"], "needs a voice_design checkpoint"),
        ("base", ["--text", "Hi.", "--ref-text", "Hello."], "ref_text was given without ref_audio"),
        ("custom_voice", ["--text", "Hi.", "--ref-audio", "REF"], "only for Base"),
        ("base", ["--text", "Hi.", "--ref-audio", "/nonexistent.wav"], "nonexistent"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    tiny_model_dir, reference_audio, tmp_path, capsys, variant, args, message
):
    args = [str(reference_audio) if a == "REF" else a for a in args]
    code, codes = synth(tiny_model_dir(variant), tmp_path, "bad", *args)
    assert code == 2 and codes is None
    assert message in capsys.readouterr().err
