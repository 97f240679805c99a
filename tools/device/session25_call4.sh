# Session 25 call 4: session 24's next_one_gpu_4.sh with ENV set to the three kernels call 1 (run 93) passed, and an 800 level.
# One-GPU call (nvidia-h200, ~6 minutes), after next_one_gpu.sh: the codec kernels that next_one_gpu.sh turned on, in
# the stack, for the record (set ENV to their settings, e.g. ENV="OMNI_CODEC_TRANSFORMER_KERNELS=1
# OMNI_CODEC_RVQ_KERNEL=1", before their defaults change; empty once they are the defaults).
# Prediction: 512 streams +1-4% over next_one_gpu_2.sh's W stack, no gap; the codec tick -3-8%; 128 TTFA p99
# 215-250 ms.
source tools/device/setup.sh
stamp start
ENV="OMNI_CODEC_TRANSFORMER_KERNELS=1 OMNI_CODEC_RVQ_KERNEL=1 OMNI_CODEC_ATTENTION_KERNEL=1"
env $ENV $S --concurrency 128 512 800 --level-timeout 150 --out /tmp/K; save K
[ -d /tmp/W ] && python3 tools/compare_runs.py today=/tmp/W kernels=/tmp/K
