# Session 13, call 1 (one H200): the talker paces real-time streams (pace_ahead_s 2: a streamed response sits out
# decode steps while the audio sent is 2 s ahead of playback from its first chunk). One stack sized for 800
# streams, at 128, 512 and 800 streams; 4 rounds a level (each paced request lasts at least ~8 s).
source tools/device/setup.sh
stamp start
OMNI_TALKER_PACE_AHEAD_S=2 $S --rounds 4 --concurrency 128 512 800 --out /tmp/P; save P
