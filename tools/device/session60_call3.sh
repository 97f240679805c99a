# Run 216 (session 60, call 3) = run 215 again without 1,024 streams (both stacks ran out of an H100's memory starting for
# 1,024 slots): the served setting from run 214 checked: `omni serve --mps` (built this session: an MPS
# daemon of serve's own; the talker, sharing its GPU with the codec, queues steps ahead with CUDA_MPS_CLIENT_PRIORITY=1)
# against today's default, each its own stack on one machine (A first), at 16 / 128 / 512 / 1,024 streams opened at
# once, 6 rounds. One-GPU call (~8 minutes with the start).
# Why: run 214 (an H100, with a sitecustomize probe for the priority) gave P against A +26 / +9 / +10% at 16 / 128 / 512
# streams, TTFA p50 at 16 streams 49 -> 42 ms, no gapped request. Its rule (P >= 103% of A at 512, TTFA p50 at 16 <=
# 120%, no gap) passed, so the setting was built; this checks it through serve's own path and at 1,024 streams.
# Prediction: S against A +5 to +15% at 128 / 512 / 1,024 streams, 16 streams +10 to +30%; TTFA p50 at 16 within 10% of
# A's or better; no gapped request in S at <= 512 streams (at 1,024, no more gapped requests than A).
# Rule, written before the run: `bench_stack --mps` becomes the state card's one-GPU stack and `omni serve --mps` the
# documented one-GPU layout if S >= 103% of A at 512 and 1,024 streams, S's TTFA p50 at 16 <= 120% of A's, and S has no
# more gapped requests than A at any level. Otherwise serve --mps stays an option and the docs say what it measured.
source tools/device/setup.sh
stamp start
$S --concurrency 16 128 512 --level-timeout 150 --out /tmp/A; save A
$S --mps --concurrency 16 128 512 --level-timeout 150 --out /tmp/S; save S
grep -h "talker service:" /tmp/S/logs/*serve.log | head -2
ls /tmp/S/logs | head -20
tail -3 /tmp/S/logs/*mps-server.log 2>/dev/null
stamp done
