# One-GPU call (nvidia-h200, ~7 minutes): the talker's lead floor at 300 ms (OMNI_TALKER_MIN_LEAD_MS=300) against
# today's default (200) at 512 and 800 streams, on one machine.
# Today (runs 78-79, session 22): 800 requests open at once gap 9% (default) and 6% (fast sine) from the first byte,
# 0% with a 100 ms buffer; every gap in the opening wave, first gaps at 0.80 s (p50), the gapped requests' silence
# p90 48-51 ms, max 108 ms. The floor (session 17-18) sends a stream's held frames once a listener who started at
# the first chunk would be under min_lead_ms ahead; 200 took 800's gaps 91% -> 40% (runs 65-66). A floor 100 ms
# higher sends those frames ~100 ms sooner: about the silence the gapped requests have now.
# Prediction: 800 gapped 3-9% -> <= 3%, early chunks per request 1.8 -> 3-4, codec rows per request +0.5-1.5,
# audio-s/s within 3%, TTFA p50 within 30 ms; 512 no gap, audio-s/s within 3%.
# Rule, written before the runs: min_lead_ms 300 becomes the default (TalkerConfig and the H200 profile) if at 800
# its gapped share is <= 3% and at most half the same machine's default's, its TTFA p50 is no more than 30 ms over
# the default's, and at 512 it has no gap at >= 97% of the default's audio-s/s.
source tools/device/setup.sh
stamp start
$S --concurrency 512 800 --level-timeout 150 --out /tmp/D; save D
OMNI_TALKER_MIN_LEAD_MS=300 $S --concurrency 512 800 --level-timeout 150 --out /tmp/L300; save L300
python3 tools/compare_runs.py default=/tmp/D lead_300=/tmp/L300
