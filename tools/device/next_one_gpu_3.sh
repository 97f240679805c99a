# One-GPU call (nvidia-h200, ~5 minutes), after next_one_gpu.sh: why the code predictor's GEMM at 1 row
# runs at two speeds.
# Why: runs 147-151 (session 38) found fused_draws' 1-row cost (5.02-5.06 -> 5.17-5.21 ms) in one kernel the setting
# does not touch, nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN (75 calls a 1-row step): ~9.6 us a call (716-728 us a step)
# in 4 of 6 captures without the setting, ~12 us (880-913 us) in the other two and in 7 of 7 with the predictor's
# indexed draws; call by call (run 151) the slow and fast calls fall in a regular pattern over the step. Here Nsight
# Compute reads 150 of its calls (two graph replays, after two steps) in each build, with the caches left as the step
# leaves them (--cache-control none) and the clocks as they are: duration, DRAM bytes read, L2 hit rate.
# Prediction: the slow calls read more from DRAM (their weight not in L2; the fast ones find part of it there); if
# both read the same, the difference is not the cache (then: clocks or where the thread-block clusters land).
# Nothing is decided on this run. (ncu replays each kernel per metric pass, so its durations are not the replay's.)
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for mode in "$M" "$M+fused-draws"; do
    tag=$([ "$mode" = "$M" ] && echo off || echo on)
    "$NCU" --kernel-name regex:2x1_v_bz_TNN --launch-skip 150 --launch-count 150 --cache-control none \
        --clock-control none --csv --page raw \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct \
        python3 tools/replay_talker_step.py --mode "$mode" --batch 1 --steps 6 > $OUT/ncu_$tag.csv 2> $OUT/ncu_$tag.err
    tail -3 $OUT/ncu_$tag.err
    python3 - "$OUT/ncu_$tag.csv" "$tag" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))  # the program's own lines first, then ncu's header, units, one row a call
at = next(i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r)
head, units, data = rows[at], rows[at + 1], [r for r in rows[at + 2:] if r and r[0].isdigit()]
col = {name: head.index(name) for name in ("gpu__time_duration.sum", "dram__bytes_read.sum", "lts__t_sector_hit_rate.pct")}
for name, i in col.items():
    values = [float(r[i].replace(",", "")) for r in data]
    print(sys.argv[2], name, units[i], "calls", len(values), "first 75:", [round(v, 1) for v in values[:75]])
PY
    stamp "$tag"
done
