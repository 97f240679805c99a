# One-GPU call (nvidia-h200, ~4 minutes with a fresh machine's start): the stack at 512 streams with both talker-step
# changes that run 86 (session23_call4.sh) adopted, K/V writes as one Triton copy per layer and each residual add
# fused into the RMSNorm after it, before they become the defaults in the tree. For the record, not a rule: the rule
# was the step benchmark's (run 86: 512-row graph step 13.587 -> 12.227 ms together, every check passing), and there
# is device time for only one stack level.
# Prediction: in-stack talker step at 512 streams 27.2 -> 25-26 ms (run 83: 27.16), audio-s/s +3-6% over run 83's
# default (1,213.2; another machine start, so within its spread), no gap.
source tools/device/setup.sh
stamp start
OMNI_TALKER_KV_WRITE_KERNEL=1 OMNI_TALKER_FUSED_ADD_NORM=1 $S --concurrency 512 --level-timeout 150 --out /tmp/KA
save KA
