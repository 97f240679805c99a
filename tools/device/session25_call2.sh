# Session 25 call 2: session 24's next_one_gpu_2.sh, unchanged.
# One-GPU call (nvidia-h200, ~8 minutes), any time: today's defaults in the stack (the codec's fast sine and K/V
# window kernel on since session 24) at 128, 512 and 800 streams, and the window kernel off at 512 and 800, for the
# record: the window kernel was adopted on the codec step benchmark (run 91), not yet measured in a stack.
# Runs 89 (session 24): session 23's defaults plus the fast sine: 512 streams 1,259.0 audio-s/s with no gap, codec
# busy 0.93 with 60.4 ms ticks; 800 0.2% of requests gapped. Run 91: the 128-row 2-frame graph step 11.38 -> 8.91 ms
# with the window kernel, 15 frames 40.30 -> 37.58.
# Prediction: W (today's default) 512 1,290-1,380 audio-s/s with no gap, codec tick 50-57 ms, the talker's step back
# to setting the pace (codec busy < 0.90); 800 at most 1% gapped; 128 TTFA p99 215-250 ms. NW (window kernel off):
# 512 within 2% of run 89's FS (1,259.0).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 --level-timeout 150 --out /tmp/W; save W
OMNI_CODEC_WINDOW_KERNEL=0 $S --concurrency 512 800 --level-timeout 150 --out /tmp/NW; save NW
python3 tools/compare_runs.py window_kernel=/tmp/W no_window_kernel=/tmp/NW
