# One-GPU call (nvidia-h200, ~8 minutes), any time: the talker's draw as one kernel with its processors and the slots'
# counters, and the predictor's draws reading their parameters at the slot (branch fused-talker-draw, 940323b; run
# 143 reverted it on main by its rule) against main, again, with three pairs of processes.
# Before the call, on main, make the new tree and carry it with the wheels ([".whl", ".whl_stack", "build/ab_new.tgz"]):
#     git archive --format=tar.gz -o build/ab_new.tgz fused-talker-draw omni kernels services tools
# Why: run 143 (base/new/new/base) timed new 1.4% shorter at 512 rows and 1.0% at 128 in both pairs, but 2.7-2.8%
# longer at 1 row in both; run 144 (one process per tree, another machine) had the 1-row step the other way (new
# 1.5% shorter) and the touched kernels no slower on the GPU, with a GEMM the change does not touch differing most:
# the 1-row step moves between processes by up to ~0.2 ms.
# Here: the dumps (main against the branch's tree, to the bit), then six processes, base, new, new, base, base, new,
# at 1 and 512 rows (128 left out for time).
# Prediction: new shorter at 512 rows by 1-1.8% in each pair; at 1 row the mean of the three pairs' changes between
# -3% and +1%.
# Rule, written before the run: the change goes back on main (cherry-pick 940323b and 4dd753d, then the docs) if the
# dumps are equal, no pair has 512 rows more than 0.3% slower in the new tree, and the mean of the three pairs' 1-row
# changes is at most +0.3%; otherwise it stays off and the branch is left as it is.
source tools/device/setup.sh
source tools/device/talker_ab_trees.sh
unpack_tree build/ab_new.tgz /tmp/new || exit 1
stamp start
talker_dumps $PWD /tmp/new
for pair in "$PWD base1" "/tmp/new new1" "/tmp/new new2" "$PWD base2" "$PWD base3" "/tmp/new new3"; do
    set -- $pair
    talker_bench $1 $2 1,512
done
