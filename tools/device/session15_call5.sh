# Session 15, call 5 (run 59): one more sample of today's default at 128 streams with the device time left (~300 s).
# Runs 54-57 gave TTFA p99 249, 244, 243 and 230 ms. Prediction: 230-250 again.
source tools/device/setup.sh
stamp start
$S --concurrency 128 --out /tmp/D4; save D4
