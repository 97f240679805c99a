# Run 211 (session 58, call 7) = session58_call6.sh at 16 streams: admissions of several prompts at once, whose
# embeddings share one pass (rows = their positions together).
# Prediction: no Triton compile in the talker's or the codec's log after ready (batched embeddings past 32 rows take
# cuBLAS; up to 32 they take the variants the warm-up compiled).
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
$S --concurrency 16 --rounds 2 --out /tmp/stack_probe; save stack_probe
for log in $(find /tmp -name serve.log 2>/dev/null); do
    echo "== $log: $(grep -c '\[triton-compile\]' "$log") compiles in all"
    ready=$(grep -n "Press Ctrl-C" "$log" | head -1 | cut -d: -f1)
    echo "ready at line $ready of $(wc -l < "$log")"
    awk -v r="${ready:-0}" 'NR > r && /triton-compile|TTFA|request/ {print NR": "substr($0, 1, 260)}' "$log" | head -40
    grep '\[triton-compile\]' "$log" | awk '{n[$5]++; ms[$5]+=$6} END {for (k in n) print n[k], ms[k], k}' | sort -k2 -n -r | head -15
done
