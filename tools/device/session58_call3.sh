# Run 207 (session 58, call 3): run 206's fp32 half again, after the dot kernel's stages are fitted to the device's
# shared memory (skinny_linear.launch_fitting), 1.7B, +norm-rope-attention's mode and every check it runs (~3 minutes).
# Why: run 206's fp32 run stopped at Triton's OutOfResources (294,912 bytes of shared memory asked, 232,448 there):
# the predictor's [6144, 1024] gate_up at 17-32 rows takes the dot kernel's 64 x 256 launch with 4 stages, which fits
# in bf16 (49,152 bytes compiled for sm_90) but not in fp32. So a talker served in fp32 on a GPU with the default
# skinny_linear settings could not run its 17-32-row steps. The call now runs with one stage fewer at a time until it
# fits (3 there: 196,608 bytes), the same sums.
# Prediction: the fp32 run completes; every check equal, norm+rope+attention against the two kernels included; the
# bf16 launches are unchanged (no refit: each fits, tests/test_skinny_linear.py compiles them), so no timing moves.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
A=$M+norm-rope-attention
talker_order 1.7B 1,32 "$A" check_fp32 --iters 5 --dtype float32
python3 - "$OUT/talker_check_fp32.json" <<'PY'
import json, sys

def walk(node, path):
    if isinstance(node, dict):
        if "codes_equal" in node or "caches_equal" in node:
            print(path.rsplit("/", 1)[-1][-48:], {k: v for k, v in node.items() if "equal" in k})
            return
        for key, value in node.items():
            walk(value, f"{path}/{key}")

walk(json.load(open(sys.argv[1])), "")
PY
