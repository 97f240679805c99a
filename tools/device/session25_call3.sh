# Session 25 call 3: session 24's next_one_gpu_3.sh, moved onto call 4's stack (run 95: the window, RVQ, attention
# and transformer kernels on, 512 streams 1,411.4 audio-s/s, 800 streams no gap), since those kernels turn on by
# default this session. The rule is the header's below, with K (run 95) in place of W.
# Prediction, written before the run: with the kernels the codec step's fixed part is shorter still, so fewer rows
# save less: 512 +0-2% over K, TTFA p50 +10-40 ms; 800 within K's + 1 point.
# Rule: 25-frame steady chunks become the defaults if at 512 no request gaps at >= 102% of K's audio-s/s and at 800
# the gapped share is at most K's + 3 points.
# One-GPU call (nvidia-h200, ~5 minutes), right after next_one_gpu_2.sh on the same machine: 25-frame steady chunks
# (talker chunk_frames 25; codec graph chunk lengths 1, 4, 8, 15, 25 and merge_chunk_frames 25) on today's defaults,
# against next_one_gpu_2.sh's W stack.
# Run 90 (session 24, without the window kernel): 512 streams +2.5% (1,290.1 against 1,259.0), codec rows per
# request 11.95 -> 8.91, TTFA p50 +26 ms, but one request of 3,072 gapped (30 ms): not adopted. With the window
# kernel the codec step's fixed part is ~2.5 ms shorter at 128 rows (run 91), so fewer rows save less.
# Prediction: 512 +0-3% over W, TTFA p50 +10-40 ms; 800 within W's + 1 point.
# Rule, written before the run: 25-frame steady chunks become the defaults (talker chunk_frames 25, codec
# graph_chunk_lengths + 25, merge_chunk_frames 25) if at 512 no request gaps at >= 102% of W's audio-s/s and at 800
# the gapped share is at most W's + 3 points.
source tools/device/setup.sh
stamp start
OMNI_CODEC_TRANSFORMER_KERNELS=1 OMNI_CODEC_RVQ_KERNEL=1 OMNI_CODEC_ATTENTION_KERNEL=1 \
    OMNI_TALKER_CHUNK_FRAMES=25 OMNI_CODEC_GRAPH_CHUNK_LENGTHS=1,4,8,15,25 OMNI_CODEC_MERGE_CHUNK_FRAMES=25 \
    $S --concurrency 512 800 --level-timeout 150 --out /tmp/C25; save C25
[ -d /tmp/W ] && python3 tools/compare_runs.py today=/tmp/W chunks25=/tmp/C25
