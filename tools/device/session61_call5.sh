# Run 223 (session 61, call 5) = the decode-attention kernel's launch settings swept at the backbone's shape on an
# H100 (live lengths 60-250 over a 512-position cache, 128 and 512 rows).
# Why: run 222's 512-row step profile put decode attention at 5.3 ms of 12.4 busy on an H100 (~43%); at ~172 live
# positions the backbone's K/V is ~10 GB a step, ~3.0 ms at 3.35 TB/s, and the predictor's calls ~0.64 ms (run 219),
# so the backbone's calls may read well under the bandwidth there (run 25 on an H200: 3.87 TB/s).
# Prediction: today's LAUNCH (64 keys, 4 warps, 3 stages) 2.3-3.0 TB/s at 512 rows, within 5% of the best setting.
# Rule: a setting >= 8% faster than LAUNCH at 512 rows and not slower at 128 goes to a step A/B (next session).
source tools/device/setup.sh
stamp start
python3 tools/bench_decode_attention.py --shapes backbone --batches 128 512 --out $OUT/backbone_attention.json \
    > $OUT/sweep.txt 2>&1
grep -E "defaults|best|rror" $OUT/sweep.txt | cut -c1-250
sort -t'|' -k6 -n $OUT/sweep.txt | grep "B=512" | head -8
stamp sweep
