# Run 140 (session 37, call 1): next_one_gpu_3.sh as it stood, base a4e787c.
# One-GPU call (nvidia-h200, ~6 minutes), any time: the talker step's slot counters gathered once (session 36's last
# change, 145bd7f: `drawn` gathered once a step and passed to `_draw_talker`, which returns `finished`; `next_pos`
# written from the positions already gathered; 5 launches fewer a step by tools/census_talker_step.py, the same bits
# on the CPU) against the code before it, a4e787c, carried as build/ab_base.tgz (tools/device/talker_ab_trees.sh
# says how to make it; carry ["build/ab_base.tgz"] with the wheels). As run 138: the dumps first (the correctness
# gate), then the two trees in separate processes, base, new, new, base.
# Why: run 138 timed 77 launches on the critical path at ~3.6 us each at 1 row, ~1.3 us at 128 rows.
# Prediction: new shorter by 0.1-0.5% at 1 row, 0-0.3% at 128 and 512 (5 launches: within the spread between
# processes at 128 and 512); the dumps equal to the bit.
# Rule, written before the run: the change stays if the dumps are equal and, in both pairs, no batch is more than
# 0.3% slower in the new tree; otherwise it is reverted.
source tools/device/setup.sh
source tools/device/talker_ab_trees.sh
base_tree || exit 1
stamp start
talker_dumps
talker_bench /tmp/base base1; talker_bench $PWD new1; talker_bench $PWD new2; talker_bench /tmp/base base2
