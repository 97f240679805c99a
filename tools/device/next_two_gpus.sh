# The two-GPU runs still owed to issue 9 (nvidia-h200-x2; session 12's run 44 made only the first half of A before
# the device time ran out). One call, ~9 minutes:
#     bash tools/device/next_two_gpus.sh 2>&1 | tee $OUT/log.txt
# with kind nvidia-h200-x2 and carry [".whl", ".whl_stack"].
#   A: today's defaults on two GPUs again (run 44: 2,006.2 audio-s/s at 512 streams, one run), with 1 and 256 streams.
#   B: two codec processes on the codec's GPU (run 36: 1,785.4 audio-s/s, before session 9's shared calls, the 2-frame
#      first chunk and the first frame in the prefill's step); in run 44 the codec was busy 0.93, the talker 0.81.
source tools/device/setup.sh
S2="${S/--gpus 1/--gpus 2}"
stamp start
$S2 --concurrency 1 256 512 --out /tmp/A; save A
$S2 --concurrency 512 --codec-replicas 2 --ready-timeout 300 --out /tmp/B; save B
