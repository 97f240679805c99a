# Sourced at the start of a device call (bash), from the repo root of the copied tree:
#     source tools/device/setup.sh
# with carry [".whl", ".whl_stack"] (tools/device/fetch_wheels.sh fills them). The copy is a bare checkout, so
# services/ and kernels/ are copied to where `omni.services` and `omni.kernels` import from. Defines $S (the one-GPU
# stack benchmark as session 11 ran it), stamp (elapsed time) and save NAME (print /tmp/NAME/table.md, tar it to
# $OUT/NAME.tgz: what comes back is at most 8 files).
export PYTHONUNBUFFERED=1
cp -r services omni/services && cp -r kernels omni/kernels
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl .whl_stack/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)'
S="python3 tools/bench_stack.py --models 1.7b --gpus 1 --frames 125 --rounds 6 --client-processes 8 \
--gateway-workers 4 --ready-timeout 250 --level-timeout 110 --checkpoints /tmp/ck"
T0=$(date +%s)
stamp() { echo "=== $1 at +$(($(date +%s) - T0)) s ($(date -u +%H:%M:%S) UTC)"; }
save() { cat "/tmp/$1/table.md" 2>/dev/null; tar czf "$OUT/$1.tgz" -C /tmp "$1"; stamp "$1 done"; }
# talker_order MODEL BATCHES MODES TAG [ARGS...]: one process timing bench_talker_step's MODES in their order (the
# same talker, so the same weights), its checks and timings printed, JSON to $OUT/talker_TAG.json; a one-process A/B
# calls it twice, one order each (sessions 38-39 wrote this function into each script).
talker_order() {
    local model=$1 batches=$2 modes=$3 tag=$4
    shift 4
    python3 tools/bench_talker_step.py --models "$model" --modes "$modes" --batches "$batches" --max-len 512 \
        --check-steps 2 --iters 50 --json "$OUT/talker_$tag.json" "$@" 2>&1 \
        | grep -E "graph vs eager|linear vs|draws vs|projected lookups|lookup kernels|step input kernel|step write kernel|step rope tables|attention kernel vs|fused_vs_sdpa|default paths|silu_mul kernel|programmatic launch|batch [0-9]+:|replays at|Error|error|unknown|Traceback" \
        | cut -c1-300
    stamp "$tag"
}
