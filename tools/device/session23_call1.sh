# Next one-GPU call (nvidia-h200, ~7 minutes): the code predictor's first pass through the decode kernel
# (`short_pass_kernel`, on since session 22) in the stack, against the path before (OMNI_TALKER_SHORT_PASS_KERNEL=0),
# one machine, 512 and 800 streams.
# Run 82 (session 22): the 1.7B talker's graph step 14.945 -> 13.596 ms at 512 rows (-9.0%), 8.733 -> 8.375 at 128;
# checks passed. Runs 78-79: at 512 streams the talker sets the pace on one GPU (busy 0.90-0.91, step 29.4 ms at
# ~450 rows beside the codec, ~2x its solo time); a 13% shorter codec step gave only 1.5% (more ticks, same talker
# step).
# Prediction: the in-stack talker step at 512 streams ~29.4 -> 27-28 ms at the same batch, audio-s/s +3-6% (1,092-1,120
# for the default on runs 79 and 81's machines); at 800 audio-s/s +2-5%, gapped share inside the default's 1-9%.
# Rule, written before the runs: `short_pass_kernel` stays on if at 512 streams its stack has no gap and at least the
# off stack's audio-s/s (>= 100%); otherwise it goes off by default (the talker setting and TalkerRunner's default).
source tools/device/setup.sh
stamp start
OMNI_TALKER_SHORT_PASS_KERNEL=0 $S --concurrency 512 800 --level-timeout 150 --out /tmp/SDPA; save SDPA
$S --concurrency 512 800 --level-timeout 150 --out /tmp/D; save D
python3 tools/compare_runs.py sdpa_short=/tmp/SDPA default=/tmp/D
