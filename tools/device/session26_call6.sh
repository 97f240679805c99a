# Session 26 call 6 (nvidia-h200, ~1 minute): the channels-last kernels after `_tile` (the two kernels' tile
# prologue as one Triton function, after runs 99-103) on the GPU: the residual add with its SnakeBeta against the two
# separate kernels, bitwise, bf16 with the fast sine, at the 128x15 step's last-block shape and odd ones; SnakeBeta
# and the add against their fp32 references within half a bf16 ulp. Prediction: all equal, all within bound.
source tools/device/setup.sh
stamp start
python3 - <<'PY'
import torch
from omni.kernels.channels_last import bias_residual_cl, channels_last_empty, snakebeta_cl
from omni.kernels.snakebeta import bias_residual_reference, snakebeta_reference

gen = torch.Generator().manual_seed(0)
worst = 0.0
for b, c, t in ((1, 1, 1), (3, 5, 129), (2, 768, 1201), (128, 96, 1920 * 15)):
    x = (torch.randn(b, t + 2, c, generator=gen) * 3).bfloat16().cuda().transpose(1, 2)[..., 1 : t + 1]
    y = (torch.randn(b, t, c, generator=gen) * 3).bfloat16().cuda().transpose(1, 2)
    alpha, beta, bias = ((torch.randn(c, generator=gen) * 0.5).cuda() for _ in range(3))
    buffer = channels_last_empty(b, c, t + 6, x).fill_(7)
    fused = bias_residual_cl(x, y, bias, snake=(alpha, beta), snake_out=buffer[..., 6:], fast_sin=True)
    alone = bias_residual_cl(x, y, bias)
    same = torch.equal(fused, alone) and torch.equal(buffer[..., 6:], snakebeta_cl(alone, alpha, beta, fast_sin=True))
    same = same and bool(torch.all(buffer[..., :6] == 7))
    want = bias_residual_reference(x.float(), y.float(), bias)
    rel_add = float(((alone.float() - want).abs() / want.abs().clamp(min=1e-3)).max())
    want = snakebeta_reference(x.float(), alpha, beta, bias)
    got = snakebeta_cl(x, alpha, beta, bias=bias, fast_sin=True).float()
    rel_snake = float(((got - want).abs() / want.abs().clamp(min=1e-3)).max())
    worst = max(worst, rel_add, rel_snake)
    print({"shape": [b, c, t], "fused_equals_separate": same, "add_rel": rel_add, "snake_rel": rel_snake}, flush=True)
    assert same
print({"worst_rel": worst, "ok": worst <= 2**-8 + 1e-6})
PY
stamp checks
