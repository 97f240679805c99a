# Run 217 (session 60, call 4) = the MPS priority's own part: `omni serve --mps` as built (the talker below normal) against
# the same with CUDA_MPS_CLIENT_PRIORITY=0 in the environment (serve leaves an operator's setting as it is: the talker
# still queues ahead under MPS, at normal priority), each its own stack on one machine (normal first), 16 and 512
# streams opened at once, 6 rounds. One-GPU call (~6 minutes with a start).
# Why: runs 214 and 216 measured MPS + queueing ahead + the priority together; MPS alone lost in runs 16, 48 and 113.
# Whether the priority matters decides what a Kubernetes operator must set beside the device plugin's MPS sharing.
# Prediction: at normal priority, TTFA p50 at 16 streams 20-80% higher than below normal (the codec's first ticks behind
# queued talker steps, as in run 213) and 512 streams within 3%.
# Rule, written before the run: the chart documents the talker's CUDA_MPS_CLIENT_PRIORITY=1 for an MPS-shared GPU as
# needed if normal priority's TTFA p50 at 16 streams is >= 110% of below normal's or its audio-s/s at 512 <= 97%;
# otherwise as harmless but not measured to matter.
source tools/device/setup.sh
stamp start
CUDA_MPS_CLIENT_PRIORITY=0 $S --mps --concurrency 16 512 --level-timeout 150 --out /tmp/N; save N
$S --mps --concurrency 16 512 --level-timeout 150 --out /tmp/S; save S
grep -h "talker service:" /tmp/N/logs/*serve.log /tmp/S/logs/*serve.log | head -2
stamp done
