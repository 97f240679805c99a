# The runs still owed to issue 9 that need nvidia-h200-x2 (not lent in session 11). One call, ~9 minutes:
#     bash tools/device/next_two_gpus.sh 2>&1 | tee $OUT/log.txt
# with kind nvidia-h200-x2 and carry [".whl", ".whl_stack"].
#   A: today's defaults on two GPUs (the 2-frame first chunk and session 9's shared gRPC calls were never run there;
#      compare runs 33 and 35: 1,567.7 and 1,630.9 audio-s/s at 512 streams, 26-36% of requests with a gap).
#   B: two codec processes on the codec's GPU (run 36: 1,785.4 audio-s/s, not the default).
source tools/device/setup.sh
S2="${S/--gpus 1/--gpus 2}"
stamp start
$S2 --concurrency 1 128 256 512 --out /tmp/A; save A
$S2 --concurrency 512 --codec-replicas 2 --ready-timeout 300 --out /tmp/B; save B
