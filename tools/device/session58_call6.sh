# Run 210 (session 58, call 6) = session58_call5.sh again after the talker's warm-up runs prompts of 8, 16, 24 and 32
# positions (services/talker/service.py WARM_UP_PROMPT_LENGTHS).
# Prediction: no Triton compile in the talker's log after it is ready (run 209: two, 253 and 273 ms, in the first
# two requests); TTFA p99 at 1 stream under 60 ms (run 209: 297 ms; p50 24 ms).
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
