"""Speech-like test audio from espeak-ng (installed in CI with apt; a missing binary fails the test)."""

import shutil
import subprocess


def espeak_wav(text: str, voice: str = "en", speed: int = 175) -> bytes:
    """WAV bytes (22050 Hz, 16-bit mono) of `text` spoken by espeak-ng."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise RuntimeError("espeak-ng not found; install it with `apt-get install -y espeak-ng`")
    result = subprocess.run([binary, "-v", voice, "-s", str(speed), "--stdout", text], capture_output=True, check=True)
    return result.stdout
