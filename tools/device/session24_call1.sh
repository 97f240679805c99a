# Session 24 call 1 (runs 89+): tools/device/next_one_gpu.sh as written in session 23, unchanged.
# Next one-GPU call (nvidia-h200, ~8 minutes): the codec's fast sine against today's defaults (session 23: the K/V
# write kernel and the fused add + norm on), one machine, 512 and 800 streams.
# Runs 83-88 (session 23, one machine): the default (session 22's) 1,213.2 audio-s/s at 512; with the two talker
# kernels 1,219.4 (run 87: the talker's step 27.2 -> 24.2 ms, but the codec busy 0.94 and twice the deferred rows:
# the codec set the pace); with the fast sine as well 1,306.9 (run 88, +7.2%), one level each, no rule. Against
# session 22's default the fast sine gave 100.4% at 512 (run 84) and 0 gapped requests at 800 against 15%.
# Prediction: D 1,190-1,250 at 512; FS 1,270-1,330 (+5-9%), no gap; 800: FS gapped share at most D's.
# Rule, written before the runs: `fast_sine` turns on by default (the codec setting; help text, H200 profile comment)
# if at 512 FS has no gap at >= 102% of D's audio-s/s and at 800 its gapped share is at most D's + 3 points.
source tools/device/setup.sh
stamp start
$S --concurrency 512 800 --level-timeout 150 --out /tmp/D; save D
OMNI_CODEC_FAST_SINE=1 $S --concurrency 512 800 --level-timeout 150 --out /tmp/FS; save FS
python3 tools/compare_runs.py default=/tmp/D fast_sine=/tmp/FS
