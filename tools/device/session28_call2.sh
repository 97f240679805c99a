# Session 28, call 2 (nvidia-h200, ~9 minutes; run with norm_rope_write_kernel on by default after call 1): next_one_gpu.sh (today's defaults in the stack at 128, 512, 800 and
# 1,024 streams opened at once), now with each level's GPU utilization, power and SM clock sampled by nvidia-smi
# (tools/gpu_sampler.py) and the codec's replays by their capture-time costs as a share of the level
# (`codec_planned_share`), to split the stack's distance from the step benchmarks' ceiling (≈ 1,860 audio-s/s; the
# stack 71-79% of it) into idle GPU time and the work itself.
# Prediction (stack, as next_one_gpu.sh): 128 TTFA p99 180-230 ms; 512 1,370-1,460 audio-s/s with no gap; 800
# 1,320-1,480 with at most 0.5% gapped; 1,024 1,350-1,450 with at most 2% gapped, 0% with a 100 ms buffer.
# Prediction (new figures): at 512 and above the GPU utilization 95-100% (a kernel running nearly all the time),
# power 450-650 W; codec_planned_share 0.30-0.45; talker_prefill_share 0.05-0.15; at 128 streams utilization 70-95%.
# No rule: a measurement. If utilization is >= 95% at 512+, the gap to the ceiling is in the work (padding, ramp
# chunks, prefills, the processes' turns), not in idle time; below 90%, the host side leaves the GPU waiting.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 800 1024 --level-timeout 170 --out /tmp/T; save T
grep -h "replay ms" /tmp/T/logs/*codec*.log 2>/dev/null | head -5 | cut -c1-600
