# Sourced after setup.sh: the talker step A/B'd by trees, as run 138 (session36_call3.sh) did it. The base commit
# travels as build/ab_base.tgz (carry it with the wheels), made here with
#     git archive --format=tar.gz -o build/ab_base.tgz <commit> omni kernels services tools
# base_tree: unpack it to /tmp/base as a checkout of its own (services/ and kernels/ where omni imports them from,
#     and this tree's dump tool, which the base may lack).
# talker_dumps: tools/dump_talker_steps.py in both trees (1.7B, the service's build), compared to the bit; the
#     comparison goes to $OUT/dump_compare.json.
# talker_bench TREE TAG: bench_talker_step.py in TREE with run 138's mode, batches and iterations; JSON to
#     $OUT/talker_TAG.json. Run the trees in the order base, new, new, base.
base_tree() {
    mkdir -p /tmp/base && tar xzf build/ab_base.tgz -C /tmp/base && cp -r /tmp/base/services /tmp/base/omni/services \
        && cp -r /tmp/base/kernels /tmp/base/omni/kernels && cp tools/dump_talker_steps.py /tmp/base/tools/
}
talker_dumps() {
    (cd /tmp/base && PYTHONPATH=/tmp/base:/tmp/site python3 tools/dump_talker_steps.py --out /tmp/old.pt 2>&1 | tail -2)
    python3 tools/dump_talker_steps.py --out /tmp/new.pt 2>&1 | tail -2
    python3 tools/dump_talker_steps.py --compare /tmp/old.pt /tmp/new.pt | tee $OUT/dump_compare.json
    stamp dumps
}
talker_bench() {
    local mode=fused+sampler+kv-write+add-norm+norm-rope-write
    (cd $1 && PYTHONPATH=$1:/tmp/site python3 tools/bench_talker_step.py --models 1.7B --modes $mode \
        --batches 1,128,512 --max-len 512 --check-steps 2 --iters 50 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|batch [0-9]+:|Error|error" | sed "s/^/$2 /" | cut -c1-300)
    stamp "$2"
}
