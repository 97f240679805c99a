"""The gateway's whole-file encoders: lossless formats carry exactly the samples `pcm` carries."""

import io

import numpy as np
import pytest
import soundfile as sf
from omni.services.gateway.audio_encoding import encode_audio, to_pcm16


@pytest.mark.parametrize("fmt", ["wav", "flac"])
def test_lossless_formats_hold_the_pcm_samples(fmt):
    rng = np.random.default_rng(0)
    # int16 samples as the codec sends them (seen as float by the gateway), plus values between steps and beyond +-1.
    steps = rng.integers(-32767, 32768, size=4000).astype(np.float32) / 32767
    audio = np.concatenate([steps, rng.uniform(-1.2, 1.2, size=4000).astype(np.float32)])
    decoded, rate = sf.read(io.BytesIO(encode_audio(audio, 24000, fmt)), dtype="int16")
    assert rate == 24000
    np.testing.assert_array_equal(decoded, np.frombuffer(to_pcm16(audio), dtype="<i2"))
