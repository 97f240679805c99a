# One-GPU call (~2.5 minutes on the warm machine of calls 1-5), for the record: call 5 (K/V write + fused add-norm)
# plus the codec's fast sine, 512 streams. Call 5: talker step 27.16 -> 24.16 ms but audio-s/s only 1,213.2 -> 1,219.4
# with codec busy 0.94 and codec deferred rows per request 3.6 -> 7.2: the codec may now set the pace, so its 13%
# shorter step (fast sine) may count now. Prediction: 1,240-1,300 audio-s/s, no gap. Not a rule (one level only).
source tools/device/setup.sh
stamp start
OMNI_CODEC_FAST_SINE=1 OMNI_TALKER_KV_WRITE_KERNEL=1 OMNI_TALKER_FUSED_ADD_NORM=1 $S --concurrency 512 \
    --level-timeout 150 --out /tmp/KAF
save KAF
