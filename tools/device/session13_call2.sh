# Session 13, call 2 (one H200): open loop, Poisson arrivals, the same offered load with and without pacing. At r
# requests/s of 10 s utterances about 10.x x r listeners are playing at once whatever the server does; the question
# is whether their audio has gaps. Both stacks have 960 slots; 25 s of arrivals a level.
source tools/device/setup.sh
stamp start
R="--concurrency 960 --arrival-seconds 25"
OMNI_TALKER_PACE_AHEAD_S=2 $S $R --rates 64 80 96 --out /tmp/Q; save Q
$S $R --rates 80 96 --out /tmp/U; save U
