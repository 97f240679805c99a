# The second two-GPU call owed to issue 9 (nvidia-h200-x2, ~7 minutes), same command line as next_two_gpus.sh.
#   C: the prefill burst at 128 streams on two GPUs, where a step is ~8.5 ms and the talker's GPU is not the codec's
#      (run 44: TTFA p99 290 ms, 138 after the opening wave, so the burst is what is left of the 250 ms target; on one
#      GPU the burst cost other streams' frames, session 11).
#   D: the defaults at 512 streams with 16 client processes (the machine has 32 cores): in run 44 the client's TTFA
#      p50 was 368 ms against the gateway's 219 (whose clock runs from its handler to handing a chunk to the response):
#      if 16 client processes close most of the 150 ms, it was the client; if not, the gateway's HTTP layer.
source tools/device/setup.sh
S2="${S/--gpus 1/--gpus 2}"
stamp start
OMNI_TALKER_PREFILL_BUDGET=2048 OMNI_TALKER_PREFILL_BATCH_BUCKETS=1,2,4,8,16,32,64 $S2 --concurrency 128 512 --out /tmp/C
save C
${S2/--client-processes 8/--client-processes 16} --concurrency 512 --out /tmp/D; save D
