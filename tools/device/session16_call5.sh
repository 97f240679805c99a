# Session 16, call 5 (run 64; nvidia-h200, ~3.5 minutes, the session's last ~300 s of device time): the default (first
# chunk sized when due) once more at 128 and 512 streams. Run 63 had the 128-stream p99 at 262 ms with 2-frame first
# chunks (talker_first_chunk_frames 2.0: the sizing did not act there), its gateway's send p99 62 ms against 10-19 in
# runs 60 and 62. Prediction: 128 p99 in 218-249 again (frames 2.0), 512 gaps <= 5% (frames ~3.0).
source tools/device/setup.sh
stamp start
$S --concurrency 128 512 --out /tmp/G; save G
