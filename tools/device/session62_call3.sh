# Run 226 (session 62, call 3) = the fp8 K/V cache's step A/B at a long context: the 1.7B graph step at 64 and 256
# rows after a 700-position prompt (max-len 1024), one process, M then F (F = M+fp8-kv); ~4 minutes on a warm machine.
# Why: run 225's stack (10 s requests, ~100-position prompts) gained +0.6% with the cache in fp8; the bytes it saves
# grow with the positions each row attends to, as in long utterances or long voice-clone prompts.
# Prediction: F against M -10 to -20% at 256 rows, -4 to -10% at 64 (run 224 at ~170 positions: -3.8 to -4.1% at
# 128 rows, -9.7 to -10.2% at 512). No rule: it says where the option pays.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels+step-inputs+step-rope-tables
python3 tools/bench_talker_step.py --models 1.7B --modes "$M,$M+fp8-kv" --batches 64,256 --max-len 1024 \
    --prompt-len 700 --check-steps 2 --iters 30 --json $OUT/long.json 2>&1 | grep -E "batch [0-9]+:|rror|Traceback" \
    | sed -E 's/^1.7B fused\S*(\+fp8-kv)? /\1 /' | cut -c1-200
stamp long
