# One-GPU call (nvidia-h200, ~6 minutes), any time: the talker step's slot counters gathered once (session 36's last
# change, 145bd7f: `drawn` gathered once a step and passed to `_draw_talker`, which returns `finished`; `next_pos`
# written from the positions already gathered; 5 launches fewer a step by tools/census_talker_step.py, the same bits
# on the CPU) against the code before it, a4e787c, carried as build/ab_base.tgz from
#     git archive --format=tar.gz -o build/ab_base.tgz a4e787c omni kernels services tools
# (carry ["build/ab_base.tgz"] with the wheels). As run 138: the dumps first (the correctness gate), then the two
# trees in separate processes, base, new, new, base.
# Why: run 138 timed 77 launches on the critical path at ~3.6 us each at 1 row, ~1.3 us at 128 rows.
# Prediction: new shorter by 0.1-0.5% at 1 row, 0-0.3% at 128 and 512 (5 launches: within the spread between
# processes at 128 and 512); the dumps equal to the bit.
# Rule, written before the run: the change stays if the dumps are equal and, in both pairs, no batch is more than
# 0.3% slower in the new tree; otherwise it is reverted.
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
