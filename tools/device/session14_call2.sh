# Session 14, call 2 (run 50, nvidia-h200, ~3 minutes): the talker engine alone on the 128-stream opening wave, to
# split the stack's wave (run 49: wave steps of 25-37 ms with 17-26 ms of prefill for ~18 prompts / 512 positions;
# talker first chunk p99 180 ms) into the engine's own cost and what sharing the GPU and the host with the codec, the
# gateway and the clients adds. The service's shapes: 512 slots, context 510, graph buckets, prompts of 13-39
# positions (the shipped texts), 2-frame first chunk. Then the prefill call alone at 16-20 prompts of 28 positions.
source tools/device/setup.sh
stamp start
python3 tools/check_talker_engine.py --requests 128 --frames 30 --slots 512 --max-len 510 --prompt-lengths 13,40 \
    --modes sync,sync,async --trace --out $OUT/engine_wave.json 2> $OUT/engine_wave_trace.log
stamp "engine wave done"
python3 tools/bench_prefill.py --model 1.7B --batches 16,18,20 --lengths 28 --iters 10 --graphs --max-len 510
stamp "bench_prefill done"
