# Session 36 call 3 (run 138), one GPU (~6 minutes): what session 36 removed from the talker's decode step,
# timed and checked against the code before it (cbc0cf8, carried as build/ab_base.tgz from
# `git archive --format=tar.gz -o build/ab_base.tgz cbc0cf8 omni kernels services tools`): the code predictor's
# attention inputs made once for all 15 passes (RoPE and lengths), its draws' counter offsets added in the sampler
# kernel and their ids written into the codes in place, and the frame's embeddings summed as its passes make them.
# tools/census_talker_step.py: a 1.7B decode step 1,174 -> 1,097 launches (77 fewer); the same bits on the CPU
# (tests, and tools/dump_talker_steps.py across the two trees under the interpreter).
# Method: first tools/dump_talker_steps.py in each tree (1.7B, 64 slots greedy and sampling mixed, 8 eager padded
# steps, the service's build) compared to the bit: the correctness gate. Then the two trees in separate processes, in
# the order base, new, new, base (the process is the one thing they share), the mode, batches, iterations of run 136.
# Why: run 136 timed 138 launches removed at 0.16-0.29 ms (1.2-2.1 us a launch).
# Prediction: new shorter by 1.5-2.7% at 1 row, 1.5-2.8% at 128, 0.7-1.7% at 512; codes, caches and hidden state
# equal to the bit across the trees; each tree's own checks bitwise.
# Rule, written before the run: the changes stay if the dumps are equal to the bit and, in both pairs, no batch is
# more than 0.3% slower in the new tree; otherwise they are reverted.
source tools/device/setup.sh
mkdir -p /tmp/base && tar xzf build/ab_base.tgz -C /tmp/base && cp -r /tmp/base/services /tmp/base/omni/services \
    && cp -r /tmp/base/kernels /tmp/base/omni/kernels && cp tools/dump_talker_steps.py /tmp/base/tools/ || exit 1
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
bench() {  # tree, tag
    (cd $1 && PYTHONPATH=$1:/tmp/site python3 tools/bench_talker_step.py --models 1.7B --modes $M --batches 1,128,512 \
        --max-len 512 --check-steps 2 --iters 50 --json $OUT/talker_$2.json 2>&1 \
        | grep -E "graph vs eager|batch [0-9]+:|Error|error" | sed "s/^/$2 /" | cut -c1-300)
    stamp "$2"
}
(cd /tmp/base && PYTHONPATH=/tmp/base:/tmp/site python3 tools/dump_talker_steps.py --out /tmp/old.pt 2>&1 | tail -2)
python3 tools/dump_talker_steps.py --out /tmp/new.pt 2>&1 | tail -2
python3 tools/dump_talker_steps.py --compare /tmp/old.pt /tmp/new.pt | tee $OUT/dump_compare.json
stamp dumps
bench /tmp/base base1; bench $PWD new1; bench $PWD new2; bench /tmp/base base2
