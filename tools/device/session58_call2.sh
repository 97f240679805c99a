# Run 206 (session 58, call 2): the bench's checks of +norm-rope-attention (and every check its mode's extras run) at
# a talker cache past SHORT_CACHE, in bf16 and in fp32, 1.7B (~4 minutes).
# Why: run 205's check against the two kernels was not equal, while run 203 found the kernels alone equal at the
# backbone's launch (4 warps). The bench's bit-for-bit checks used PROMPT_LEN + steps + 8 = 34 positions a slot, and a
# cache of at most SHORT_CACHE (64) positions takes the 1-warp launch (the code predictor's), where run 203 found the
# outputs a rounding apart. The checks now use check_len(steps) = 65 positions, the launch the timed steps and the
# service take.
# Prediction: every check equal in bf16 and in fp32, norm+rope+attention against the two kernels included (and
# norm+rope+write against three kernels, which with it on compares it too).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1 "$A" check_bf16 --iters 5
talker_order 1.7B 1 "$A" check_fp32 --iters 5 --dtype float32
for f in "$OUT"/talker_check_*.json; do
    python3 - "$f" <<'PY'
import json, sys

def walk(node, path):
    if isinstance(node, dict):
        if "codes_equal" in node or "caches_equal" in node:
            print(sys.argv[1].rsplit("/", 1)[-1], path.rsplit("/", 1)[-1][-48:], {k: v for k, v in node.items() if "equal" in k})
            return
        for key, value in node.items():
            walk(value, f"{path}/{key}")

walk(json.load(open(sys.argv[1])), "")
PY
done
