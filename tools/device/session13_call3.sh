# Session 13, call 3 (one H200): the voice-list read shared by a burst (the opening wave of 128 streams had waited
# up to ~200 ms on 408 ListVoices calls). Closed loop at 128 and 512 streams, 6 rounds, as runs 41-43; then the open
# loop without pacing above run 47's 96 requests/s, to find where listeners start to hear gaps.
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/V; save V
grep -c list_voices /tmp/V/logs/1.7b-1gpu-refenc.log
$S --concurrency 800 --arrival-seconds 25 --rates 104 112 --out /tmp/W; save W
