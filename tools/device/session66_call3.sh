# Run 236 (session 66, call 3): bench_codec's close check of conv1_kernel + conv2_kernel (the default after run 235)
# with the flat tiles and run 234's tiles; run 235's check of the three ran out of its 100 s.
source tools/device/setup.sh
stamp start
timeout 150 python3 - <<'PY' 2>&1 | cut -c1-400
import json, sys
sys.path.insert(0, "tools")
from bench_codec import check_close
from omni.models.qwen3_tts.codec import CodecDecoderConfig
from omni.models.qwen3_tts.codec_graphs import fuse_channels_last
def base(decoder):
    fuse_channels_last(decoder, fast_sine=True)
    decoder.residual_snake_kernel = True
def build(decoder):
    decoder.conv1_kernel = decoder.conv2_kernel = True
print(json.dumps({"check": "conv1+conv2", **check_close(CodecDecoderConfig(), "cuda", build, base=base)}), flush=True)
PY
stamp check
