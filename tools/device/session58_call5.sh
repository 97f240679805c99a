# Run 209 (session 58, call 5): which Triton kernels compile after the stack is ready (bf16, today's defaults), 1.7B,
# one GPU, 1 stream, 2 rounds (~4 minutes). A diagnostic, no change timed.
# Why: at 1 stream the first requests' TTFA is far above the rest (run 199, bf16: p90 124 ms, p99 272 ms against a p50
# of 20 ms; run 208, fp32: p99 3.3 s, in the talker's first chunk). Each service warms up before it reports ready (the
# talker one 4-token greedy request, its decode and prefill graphs captured), so a kernel compiled after ready is a
# shape or variant the warm-up missed. A sitecustomize on PYTHONPATH installs Triton's compile hooks in every process
# and prints each compile (kernel, time, constexprs) to stderr, which serve writes to serve.log.
# Prediction: some compiles after "Press Ctrl-C" in the talker's or the codec's process (prompt-length variants of the
# eager kernels), each 100-300 ms, in the first requests only; if none, the first requests' time is elsewhere.
source tools/device/setup.sh
stamp start
mkdir -p /tmp/probe
cat > /tmp/probe/sitecustomize.py <<'PY'
import os
import sys
import time


def _install() -> None:
    try:
        from triton import knobs
    except Exception:
        return
    started = {}

    def before(key, fn, **_):
        started[str(key)] = time.perf_counter()
        return None  # compile as usual

    def after(key, fn, compile, **_):
        took = time.perf_counter() - started.pop(str(key), time.perf_counter())
        constants = str(compile.get("constants"))[:160]
        print(f"[triton-compile] {time.time():.3f} pid {os.getpid()} {fn.name} {took * 1e3:.0f} ms "
              f"w{compile.get('num_warps')} s{compile.get('num_stages')} {constants}", file=sys.stderr, flush=True)

    knobs.runtime.jit_cache_hook = before
    knobs.runtime.jit_post_compile_hook = after


_install()
PY
export PYTHONPATH=/tmp/probe:$PYTHONPATH
$S --concurrency 1 --rounds 2 --out /tmp/stack_probe; save stack_probe
for log in $(find /tmp -name serve.log 2>/dev/null); do
    echo "== $log: $(grep -c '\[triton-compile\]' "$log") compiles in all"
    ready=$(grep -n "Press Ctrl-C" "$log" | head -1 | cut -d: -f1)
    echo "ready at line $ready of $(wc -l < "$log")"
    awk -v r="${ready:-0}" 'NR > r && /triton-compile|TTFA|request/ {print NR": "substr($0, 1, 260)}' "$log" | head -40
    grep '\[triton-compile\]' "$log" | awk '{n[$5]++; ms[$5]+=$6} END {for (k in n) print n[k], ms[k], k}' | sort -k2 -n -r | head -15
done
