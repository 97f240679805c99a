# Sourced after setup.sh: the talker step A/B'd by trees, as run 138 (session36_call3.sh) did it. The base commit
# travels as build/ab_base.tgz (carry it with the wheels), made here with
#     git archive --format=tar.gz -o build/ab_base.tgz <commit> omni kernels services tools
# unpack_tree TGZ DIR: a tree carried as TGZ (another commit, made as above) unpacked to DIR as a checkout of its own
#     (services/ and kernels/ where omni imports them from, and this tree's dump tool, which it may lack).
# base_tree: unpack_tree build/ab_base.tgz /tmp/base.
# talker_dumps [OLD NEW]: tools/dump_talker_steps.py in both trees (default /tmp/base and this tree; 1.7B, the
#     service's build), compared to the bit; the comparison goes to $OUT/dump_compare.json.
# talker_bench TREE TAG [BATCHES]: bench_talker_step.py in TREE with run 138's mode and iterations, at BATCHES
#     (default 1,128,512); JSON to $OUT/talker_TAG.json. Run the trees in the order base, new, new, base.
unpack_tree() {
    mkdir -p $2 && tar xzf $1 -C $2 && cp -r $2/services $2/omni/services && cp -r $2/kernels $2/omni/kernels \
        && { [ -f $2/tools/dump_talker_steps.py ] || cp tools/dump_talker_steps.py $2/tools/; }
}
base_tree() {
    unpack_tree build/ab_base.tgz /tmp/base
}
talker_dumps() {
    local old=${1:-/tmp/base} new=${2:-$PWD}
    (cd $old && PYTHONPATH=$old:/tmp/site python3 tools/dump_talker_steps.py --out /tmp/old.pt 2>&1 | tail -2)
    (cd $new && PYTHONPATH=$new:/tmp/site python3 tools/dump_talker_steps.py --out /tmp/new.pt 2>&1 | tail -2)
    python3 tools/dump_talker_steps.py --compare /tmp/old.pt /tmp/new.pt | tee $OUT/dump_compare.json
    stamp dumps
}
talker_bench() {
    local mode=fused+sampler+kv-write+add-norm+norm-rope-write
    (cd $1 && PYTHONPATH=$1:/tmp/site python3 tools/bench_talker_step.py --models 1.7B --modes $mode \
        --batches ${3:-1,128,512} --max-len 512 --check-steps 2 --iters 50 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|batch [0-9]+:|Error|error" | sed "s/^/$2 /" | cut -c1-300)
    stamp "$2"
}
