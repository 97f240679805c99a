# One-GPU call (nvidia-h200, ~6 minutes), any time: skinny_linear_dot in the stack at a few streams, on and off, each
# twice in the order on, off, off, on (one stack each; 1, 4 and 16 streams).
# Why: run 160 A/B'd it on the step alone (1.7B: 2 rows -4.6 / -4.9%, 4 rows -3.6 / -3.7%, 8 rows -6.3 / -6.6%, 16 rows
# -7.8 / -7.4%); the stack at 2-16 streams with it is not measured. At a few streams each request is made as fast as
# the steps go (RTF ~0.06-0.1), so per-stream speed follows the step.
# Prediction: 1 stream unchanged (within the spread: TTFA p50 24-27 ms both ways); 4 and 16 streams audio-s/s +3 to
# +8% with it, the service's talker step 3-8% shorter. Decides nothing (the step's A/B did); a figure for the docs.
source tools/device/setup.sh
stamp start
for tag in on1 off1 off2 on2; do
    case $tag in on*) dot=1 ;; *) dot=0 ;; esac
    OMNI_TALKER_SKINNY_LINEAR_DOT=$dot $S --concurrency 1 4 16 --out /tmp/$tag; save $tag
done
