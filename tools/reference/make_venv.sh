#!/usr/bin/env bash
# Builds the reference venv that runs the official qwen-tts 0.1.1 implementation (CPU, fp32) for parity tests.
# qwen-tts pins transformers==4.57.3, which conflicts with our runtime, so it lives in its own venv.
# Idempotent: a stamp file records the pinned set; nothing is reinstalled when it matches.
set -euo pipefail
VENV=${1:-.venv-ref}
PINS="torch==2.13.0 transformers==4.57.3 accelerate==1.12.0 qwen-tts==0.1.1 librosa soundfile einops sox onnxruntime numpy safetensors"
STAMP="$VENV/.omni-ref-stamp"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then exit 0; fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip >/dev/null
# torchaudio has no build for torch 2.13 here; qwen-tts only imports it on the 25 Hz path, so it is left out
# and replaced by a stub (see stub_torchaudio below). --no-deps for qwen-tts avoids pulling torchaudio/gradio.
"$VENV/bin/pip" install -q torch==2.13.0 transformers==4.57.3 accelerate==1.12.0 librosa soundfile einops sox onnxruntime numpy safetensors
"$VENV/bin/pip" install -q --no-deps qwen-tts==0.1.1
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$SITE/torchaudio/compliance"
cat > "$SITE/torchaudio/__init__.py" <<'PY'
"""Stub: qwen-tts imports torchaudio only for its 25 Hz tokenizer, which the 12 Hz models never use."""
from . import compliance  # noqa: F401
PY
cat > "$SITE/torchaudio/compliance/__init__.py" <<'PY'
from . import kaldi  # noqa: F401
PY
cat > "$SITE/torchaudio/compliance/kaldi.py" <<'PY'
def fbank(*args, **kwargs):
    raise NotImplementedError("torchaudio stub: the 25 Hz tokenizer is not supported in the reference venv")
PY
"$VENV/bin/python" -c "import qwen_tts; print('qwen-tts reference venv ok')" 2>&1 | grep -v -i sox || true
echo "$PINS" > "$STAMP"
