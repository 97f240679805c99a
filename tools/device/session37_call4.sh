# Run 143 (session 37, call 4; nvidia-h200, ~7 minutes): the talker's draw as one kernel with its processors and the
# slots' counters, and every draw reading the per-slot sampling parameters at the row's slot (940323b), against the
# code before it, dfe90e7, carried as build/ab_base.tgz (made with
#     git archive --format=tar.gz -o build/ab_base.tgz dfe90e7 omni kernels services tools
# and carried with the wheels). As runs 138 and 140: the dumps first (the correctness gate: the 1.7B service build's
# 8 eager padded steps of 64 slots, greedy and sampling mixed, in each tree, compared to the bit), then the two trees
# in separate processes, base, new, new, base.
# Why: the tiny census counts 450 -> 415 launches a step (the talker's processors: an upcast, 5 for the repetition
# penalty, 5 for the EOS block, a masked fill; 12 parameter gathers and the history's; 4 counter writes and their
# arithmetic; a ones_like), most of them on the critical path between the talker's head and the next step.
# Run 140 timed 5 such launches at 1 row at -2.2 / -3.7% (more than their count predicts; the spread between
# processes at 1 row was 1.6% there).
# Prediction: new shorter by 1-4% at 1 row, 0.3-1.5% at 128 rows, 0.2-1% at 512 rows (the processors' [512, 3072]
# fp32 passes go too); the dumps equal to the bit.
# Rule, written before the run: the change stays if the dumps are equal and, in both pairs, no batch is more than
# 0.3% slower in the new tree; otherwise it is reverted.
source tools/device/setup.sh
source tools/device/talker_ab_trees.sh
base_tree || exit 1
stamp start
talker_dumps
talker_bench /tmp/base base1; talker_bench $PWD new1; talker_bench $PWD new2; talker_bench /tmp/base base2
