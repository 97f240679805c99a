# Session 42 call 3 (run 169). One-GPU call (nvidia-h200, ~7 minutes): two changes from run 168's profile, each A/B'd
# on the 1.7B step in one process, both orders.
# 1. Group-major codes (TalkerRunner.codes_by_group): run 168 had index_select's generic kernel at 17.45 us x 16
#    lookups a 16-row step (279 us of 4,430), as each codebook's embedding lookup read a strided column of the
#    frame's codes; 6.4 us x 16 at 32 rows (another kernel), 2.1 us at 1 row. +codes-by-row is the old layout.
#    Prediction: 16 rows -4 to -6%, 32 rows -1 to -2%, 1 row within 0.5%.
#    Rule: keep it (on) if the 16-row step is >= 1% faster in both orders and no row count is > 0.5% slower in both.
# 2. The draw kernels' top-k search, 16 thresholds a round (8 rounds) instead of a bisection (32): run 168 had the
#    draw at 12.6 us on a sampled row (1.9 on a greedy one) at 16 and 32 rows, x 15 a step. +top-k-bisection is
#    the old search. Prediction: draw 12.6 -> 4-7 us (bench_draw), 16 and 32 rows -1.5 to -3%, 1 row (greedy in
#    this bench) within 0.5%. Rule: keep it if bench_draw's ids equal the bisection's everywhere, the 16- and 32-row
#    steps are >= 1% faster in both orders and 1 row not > 0.5% slower in both.
# Also: the draw kernel by probes (tools/bench_draw.py), and an embedding lookup by index layout (below).
source tools/device/setup.sh
stamp start
python3 tools/bench_draw.py --rows 1 16 32 64 --out $OUT/draw.json 2>&1 | grep -vE "^\s*$" | cut -c1-200
stamp draw
python3 - <<'PY' 2>&1 | tail -30
import torch, torch.nn.functional as F
table = torch.randn(2048, 2048, device="cuda").bfloat16()
print("| rows | strided F.embedding us | contiguous F.embedding us | table[index] us |\n|---|---|---|---|")
for b in (1, 2, 4, 8, 16, 17, 32, 64):
    codes = torch.randint(0, 2048, (b, 16), device="cuda")
    column, contiguous = codes[:, 3], codes[:, 3].contiguous()
    times = []
    for fn in (lambda: F.embedding(column, table), lambda: F.embedding(contiguous, table), lambda: table[contiguous]):
        for _ in range(3):
            fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(100):
                fn()
        graph.replay()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); s.record()
        for _ in range(5):
            graph.replay()
        e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1000 / 500)
    print(f"| {b} | " + " | ".join(f"{t:.2f}" for t in times) + " |")
PY
stamp embedding
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32
talker_order 1.7B 1,16,32 "$M,$M+codes-by-row,$M+top-k-bisection" ab1
talker_order 1.7B 1,16,32 "$M+top-k-bisection,$M+codes-by-row,$M" ab2
