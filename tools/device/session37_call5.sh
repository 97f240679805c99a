# Run 144 (session 37, call 5; nvidia-h200, ~3 minutes): why run 143's new tree is slower at 1 row (+2.7 / +2.8%) while
# faster at 128 and 512 (-0.9 to -1.4%): the eager 1-row step's top CUDA kernels (GPU time) in each tree, base
# dfe90e7 (build/ab_base.tgz, as run 143) and new (940323b).
# Prediction: the new tree's `_draw_talker_kernel` or its indexed `_draw_kernel`s take longer per call than the base's
# `_draw_kernel` (the parameters' loads now wait on the slot's load), by ~10 us a step or more; if the kernels' GPU
# time is no longer, the 1-row cost is in the launches' order or the graph, not in the kernels.
source tools/device/setup.sh
source tools/device/talker_ab_trees.sh
base_tree || exit 1
stamp start
for tree in /tmp/base $PWD; do
    (cd $tree && PYTHONPATH=$tree:/tmp/site python3 tools/bench_talker_step.py --models 1.7B \
        --modes fused+sampler+kv-write+add-norm+norm-rope-write --batches 1 --max-len 512 --check-steps 2 --iters 50 \
        --profile --json $OUT/profile_$(basename $tree).json 2>&1 | grep -E "batch 1:| ms |Error|error" | cut -c1-200)
    stamp "$tree"
done
