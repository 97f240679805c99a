"""Fused kernels for the talker and code predictor: fewer kernels per decoder layer (for CUDA graphs).

`fuse_talker_kernels(talker)` rewires every decoder layer of the talker and its code predictor, in place:
- q/k/v projections become one GEMM over a concatenated weight, gate/up another; the original Linear weights are
  re-pointed at row slices of the concatenated tensors, so no memory is duplicated and `state_dict()` is unchanged;
- each RMSNorm is one Triton kernel; the per-head q/k RMSNorm and RoPE are one kernel per tensor, or, where the
  cache asks (`CacheKernels.norm_rope_write`), one kernel with the K/V cache write (kv_write.norm_rope_write_kv),
  and where it asks for `norm_rope_attention` too, a one-position pass's attention is in that kernel as well
  (decode_attention.norm_rope_attention);
- SiLU(gate) · up is one kernel, or, after `use_silu_down`, part of the down projection's skinny_linear kernel, or,
  after `use_wide_linear` with `gated`, part of the gate_up projection's wide_linear kernel in forwards of many rows;
- with `add_norm`, each residual add is one kernel with the RMSNorm after it (two kernels fewer per layer);
- the text projection's SiLU is one kernel.
The kernels keep the eager roundings (kernels/transformer_fused.py), so results differ from the eager model only by
the order of fp32 sums and the GEMM's own kernel choice. Per layer: ~60 kernels → ~15.
Importing this module imports Triton: import it only where the kernels are wanted (CUDA serving, tests).
"""

import types

import torch
import torch.nn.functional as F
from torch import nn

from omni.kernels import INTERPRETED
from omni.kernels.kv_write import norm_rope_write_kv
from omni.kernels.skinny_linear import (
    KERNEL_MAX_ROWS,
    MAX_ROWS,
    dot_from_for,
    dot_rows_for,
    launch_for,
    max_rows_for,
    skinny_linear,
)
from omni.kernels.tiles import Tiles
from omni.kernels.transformer_fused import add_rms_norm, rms_norm, rms_norm_rope, silu, silu_mul
from omni.kernels.wide_linear import wide_linear
from omni.models.qwen3_tts.talker import (
    MLP,
    Attention,
    AttentionInputs,
    Decoder,
    KVCache,
    Qwen3TTSTalker,
    ResizeMLP,
    RMSNorm,
)


def _concat_rows(linears: list[nn.Linear]) -> torch.Tensor:
    """One weight [sum(out), in] holding the Linears' weights; each Linear's weight becomes a view into it."""
    fused = torch.cat([m.weight.detach() for m in linears], dim=0)
    start = 0
    for m in linears:
        rows = m.weight.shape[0]
        m.weight = nn.Parameter(fused[start : start + rows], requires_grad=False)
        start += rows
    return fused


def module_launch(module: nn.Module, weight: torch.Tensor, rows: int, interpreted: bool = INTERPRETED) -> dict | None:
    """The launch `module_linear` runs a call of `rows` rows with (`launch_for` by the settings `use_skinny_linear`
    gave the module: `skinny_dot_from`, `skinny_by_shape`), or None where it runs F.linear (no `skinny_rows`, or more
    rows). A dot-kernel launch pinned on the module (`skinny_launch`) replaces its own wherever that is the dot
    kernel's: tools/sweep_gemm_launch.py times candidates that way, in the captured step, and bench_talker_step's
    +pin-... extras A/B one. tools/bench_skinny_linear.py times each weight at it."""
    settings = module.__dict__
    if not 0 < rows <= settings.get("skinny_rows", 0):
        return None
    launch = launch_for(
        weight, rows, settings.get("skinny_dot_from"), settings.get("skinny_by_shape", False), interpreted
    )
    return settings["skinny_launch"] if launch.get("dot") and "skinny_launch" in settings else launch


def module_linear(
    module: nn.Module, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """F.linear, or `skinny_linear` at `module_launch` (up to the module's `skinny_rows` rows), or `wide_linear` at
    the module's `wide_tiles` (from its `wide_from` rows; `use_wide_linear`)."""
    k = x.shape[-1]
    rows = x.numel() // k if k else 0
    launch = module_launch(module, weight, rows)
    if launch is not None:
        return skinny_linear(x, weight, bias, max_rows=KERNEL_MAX_ROWS, launch=launch)
    settings = module.__dict__
    if bias is None and "wide_tiles" in settings and rows >= settings["wide_from"]:
        return wide_linear(x, weight, settings["wide_tiles"])
    return F.linear(x, weight, bias)


def _fused_project(self: Attention, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> tuple:
    b, t, _ = x.shape
    qkv = module_linear(self, x, self.qkv_weight)
    nq, nk = self.heads * self.head_dim, self.kv_heads * self.head_dim
    q = rms_norm_rope(qkv[..., :nq], self.q_norm.weight, self.q_norm.eps, *rope)
    k = rms_norm_rope(qkv[..., nq : nq + nk], self.k_norm.weight, self.k_norm.eps, *rope)
    v = qkv[..., nq + nk :].view(b, t, self.kv_heads, self.head_dim)
    return q, k, v


def _fused_project_write(
    self: Attention,
    x: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor],
    cache: KVCache,
    layer: int,
    slots: torch.Tensor,
    positions: torch.Tensor,
) -> torch.Tensor:
    """`Attention.project_write` with the q/k norms, RoPE and the K/V write in one kernel after the QKV GEMM, where
    the cache asks for it (`CacheKernels.norm_rope_write`); otherwise the fused `project` and the cache's write."""
    if not cache.kernels.norm_rope_write:
        return Attention.project_write(self, x, rope, cache, layer, slots, positions)
    qkv = module_linear(self, x, self.qkv_weight)
    q_norm, k_norm = (self.q_norm.weight, self.q_norm.eps), (self.k_norm.weight, self.k_norm.eps)
    return norm_rope_write_kv(qkv, self.heads, q_norm, k_norm, *rope, cache.k[layer], cache.v[layer], slots, positions)


def _fused_attention_forward(
    self: Attention,
    x: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor],
    visible: torch.Tensor,
    cache: KVCache,
    layer: int,
    slots: torch.Tensor,
    positions: torch.Tensor,
) -> torch.Tensor:
    """`Attention.forward`, with a one-position pass through the decode kernel (`visible`: the key counts [B, 1]) run
    after its QKV GEMM as one kernel, q/k norms, RoPE, K/V write and attention, where the cache asks for it
    (`CacheKernels.norm_rope_attention`; the two kernels' code, the same bits at the backbone's launch, runs 203 and
    206-207); otherwise the class's forward."""
    b, t, _ = x.shape
    if not (cache.kernels.norm_rope_attention and t == 1 and visible.dim() == 2):
        return Attention.forward(self, x, rope, visible, cache, layer, slots, positions)
    qkv = module_linear(self, x, self.qkv_weight)
    q_norm, k_norm = (self.q_norm.weight, self.q_norm.eps), (self.k_norm.weight, self.k_norm.eps)
    out = cache.norm_rope_attention(qkv, self.heads, q_norm, k_norm, *rope, cache.k[layer], cache.v[layer], slots,
                                    positions, visible.reshape(-1))  # fmt: skip
    return self.o_proj(out.view(b, t, self.heads * self.head_dim))


def _fused_mlp(self: MLP, x: torch.Tensor) -> torch.Tensor:
    down = self.down_proj
    rows = x.numel() // x.shape[-1]
    settings = self.__dict__
    if "wide_gated_tiles" in settings and rows >= settings["wide_from"]:  # SiLU(gate) * up in the GEMM's epilogue
        return down(wide_linear(x, self.gate_up_weight, settings["wide_gated_tiles"], gated=True))
    gate_up = module_linear(self, x, self.gate_up_weight)
    if rows <= settings.get("silu_down", 0):  # the SiLU in the down projection's kernel (use_silu_down)
        launch = module_launch(down, down.weight, rows)
        if launch is not None:
            return skinny_linear(
                gate_up, down.weight, down.bias, max_rows=KERNEL_MAX_ROWS, launch=launch, silu_gate=True
            )
    n = self.gate_proj.weight.shape[0]
    return down(silu_mul(gate_up[..., :n], gate_up[..., n:]))


def _fused_rms_norm(self: RMSNorm, x: torch.Tensor) -> torch.Tensor:
    return rms_norm(x, self.weight, self.eps)


def _decoder_forward_add_norm(
    self: Decoder,
    x: torch.Tensor,
    positions: torch.Tensor,
    cache: KVCache,
    slots: torch.Tensor,
    kv_len: int | None = None,
    inputs: AttentionInputs | None = None,
) -> torch.Tensor:
    """Decoder.forward with each residual add in one kernel with the RMSNorm that reads its sum: the attention's
    with the layer's post-attention norm, the MLP's with the next layer's input norm (the last with the final
    norm). The same sums and roundings as the layer-by-layer forward; two kernels fewer per layer."""
    rope, visible = self.shared_inputs(x, positions, cache, slots, kv_len, inputs)
    layers = self.layers
    h = layers[0].input_layernorm(x)
    for i, layer in enumerate(layers):
        attn = layer.self_attn(h, rope, visible, cache, i, slots, positions)
        post = layer.post_attention_layernorm
        x, h = add_rms_norm(x, attn, post.weight, post.eps)
        after = layers[i + 1].input_layernorm if i + 1 < len(layers) else self.norm
        x, h = add_rms_norm(x, layer.mlp(h), after.weight, after.eps)
    return h


def fuse_talker_kernels(talker: Qwen3TTSTalker, add_norm: bool = False) -> int:
    """Rewire the talker and its code predictor in place (idempotent); returns the number of modules changed.
    `add_norm`: the decoders' forwards also fuse each residual add into the next RMSNorm (`_decoder_forward_add_norm`;
    the talker service asks for it by default, its `fused_add_norm` setting); called again with False, they go back
    to the layer-by-layer forward."""
    for module in talker.modules():
        if isinstance(module, Decoder):
            if add_norm:
                module.forward = types.MethodType(_decoder_forward_add_norm, module)
            else:
                module.__dict__.pop("forward", None)  # the class's forward again
    changed = fuse_modules(talker.modules(), (Attention, MLP, RMSNorm), _fused_project)
    for module in talker.modules():
        if isinstance(module, Attention):  # the talker's only: the codec's transformer has caches of its own
            module.project_write = types.MethodType(_fused_project_write, module)
            module.forward = types.MethodType(_fused_attention_forward, module)
        elif isinstance(module, ResizeMLP) and not getattr(module, "fused", False):
            module.forward = types.MethodType(_fused_resize_mlp, module)
            module.fused = True
            changed += 1
    return changed


def _fused_resize_mlp(self: ResizeMLP, x: torch.Tensor) -> torch.Tensor:
    """The text projection with its SiLU in a kernel (`silu`, F.silu's bits), not a PyTorch kernel between its GEMMs:
    a PyTorch kernel waits for the one ahead to finish and lets none after it launch early."""
    return self.linear_fc2(silu(self.linear_fc1(x)))


def _skinny_linear_forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return module_linear(self, x, self.weight, self.bias)


def skinny_gemms(talker: Qwen3TTSTalker) -> dict[str, tuple[nn.Module, torch.Tensor, torch.Tensor | None]]:
    """Every GEMM of the talker and its code predictor, by name: (the module that runs it, weight, bias). Each
    nn.Linear; for a fused attention or MLP, its concatenated q/k/v or gate/up weight (named `<module>.qkv_weight`,
    `<module>.gate_up_weight`), which its forward multiplies by instead of its Linears' views."""
    gemms, replaced = {}, set()  # replaced: the Linears a fused module no longer calls
    for name, module in talker.named_modules():  # a module comes before its children
        if isinstance(module, nn.Linear) and id(module) not in replaced:
            gemms[f"{name}.weight"] = (module, module.weight, module.bias)
        elif getattr(module, "fused", False) and isinstance(module, Attention):
            gemms[f"{name}.qkv_weight"] = (module, module.qkv_weight, None)
            replaced.update(id(m) for m in (module.q_proj, module.k_proj, module.v_proj))
        elif getattr(module, "fused", False) and isinstance(module, MLP):
            gemms[f"{name}.gate_up_weight"] = (module, module.gate_up_weight, None)
            replaced.update(id(m) for m in (module.gate_proj, module.up_proj))
    return gemms


def use_skinny_linear(
    talker: Qwen3TTSTalker, on: bool = True, dot: bool = False, by_shape: bool = False, dot_32: bool = False
) -> int:
    """Every GEMM of the talker and its code predictor (`skinny_gemms`) through `kernels/skinny_linear.py` up to
    `max_rows_for` its weight's rows of input (cuBLAS gives one row of these weights a few thread blocks), or, with
    `on` False, F.linear again. With `dot`, up to MAX_ROWS rows (`dot_rows_for` its weight with `dot_32`), from
    `dot_from_for` its weight's rows up through the dot kernel (each weight block read once for all rows). With
    `by_shape`, both kernels' launches by the weight's shape (`row_launch_for`, `dot_launch_for(split=True)`). Values
    within the last bit of cuBLAS's, not its bits. Returns how many it set."""
    gemms = skinny_gemms(talker)
    for module, weight, _ in gemms.values():
        for name in ("skinny_rows", "skinny_dot_from", "skinny_by_shape", "skinny_launch"):
            module.__dict__.pop(name, None)
        if on:
            module.skinny_rows = (dot_rows_for(weight) if dot_32 else MAX_ROWS) if dot else max_rows_for(weight)
            if dot:
                module.skinny_dot_from = dot_from_for(weight)
            if by_shape:
                module.skinny_by_shape = True
        if isinstance(module, nn.Linear):
            if on:
                module.forward = types.MethodType(_skinny_linear_forward, module)
            else:
                module.__dict__.pop("forward", None)  # the class's forward again
    return len(gemms)


def use_silu_down(talker: Qwen3TTSTalker, on: bool = True, max_rows: int = 0) -> int:
    """Every fused MLP of the talker and its code predictor forms SiLU(gate) * up inside its down projection's
    skinny_linear kernel (`silu_gate`) wherever that projection runs one (`use_skinny_linear`'s rows) in a forward of
    at most `max_rows` rows (0: any), instead of one silu_mul kernel before it: one kernel fewer per layer, the same
    bits. With `on` False, silu_mul again. Returns how many MLPs it set."""
    mlps = [m for m in talker.modules() if isinstance(m, MLP) and getattr(m, "fused", False)]
    for mlp in mlps:
        mlp.__dict__.pop("silu_down", None)
        if on:
            mlp.silu_down = max_rows or KERNEL_MAX_ROWS  # the most rows the kernels take
    return len(mlps)


def use_wide_linear(
    talker: Qwen3TTSTalker,
    tiles: dict[tuple[int, int], Tiles],
    gated_tiles: dict[tuple[int, int], Tiles] | None = None,
    from_rows: int = 128,
    on: bool = True,
) -> int:
    """Every bias-free GEMM of the talker and its code predictor (`skinny_gemms`) whose weight's shape [N, K] has an
    entry in `tiles` through kernels/wide_linear.py at those tiles in forwards of at least `from_rows` rows (F.linear
    below, or the skinny kernels within their rows). With `gated_tiles`, each fused MLP whose gate_up weight [2I, K]
    has an entry there forms SiLU(gate) * up in that GEMM's epilogue instead (one kernel fewer, half the output
    written; the bits of the wide kernel through silu_mul). With `on` False, F.linear again. Values within the last
    bit of cuBLAS's, not its bits. Returns how many GEMMs it set."""
    count = 0
    for module, weight, bias in skinny_gemms(talker).values():
        for name in ("wide_tiles", "wide_gated_tiles", "wide_from"):
            module.__dict__.pop(name, None)
        if isinstance(module, nn.Linear) and "skinny_rows" not in module.__dict__:
            module.__dict__.pop("forward", None)  # the class's forward again, unless the skinny kernels route it
        if not on or bias is not None:
            continue
        shape = tuple(weight.shape)
        if isinstance(module, MLP) and gated_tiles and shape in gated_tiles:
            module.wide_gated_tiles = gated_tiles[shape]
        elif shape in tiles:
            module.wide_tiles = tiles[shape]
        else:
            continue
        module.wide_from = from_rows
        count += 1
        if isinstance(module, nn.Linear):  # its forward through module_linear (use_skinny_linear may have set it)
            module.forward = types.MethodType(_skinny_linear_forward, module)
    return count


def fuse_modules(modules, classes: tuple[type, type, type], fused_project) -> int:
    """Rewire each module not fused yet that is one of `classes` (attention, MLP, RMSNorm): the attention's q/k/v as
    one GEMM over concatenated weights and its `project` replaced by `fused_project`, the MLP's gate/up as one GEMM
    with SiLU·up one kernel, the norm one kernel. Returns how many changed. Also the codec transformer's
    (codec_graphs.fuse_transformer): its modules have the same parameter names."""
    attention, mlp, norm = classes
    changed = 0
    for module in modules:
        if getattr(module, "fused", False):
            continue
        if isinstance(module, attention):
            module.qkv_weight = _concat_rows([module.q_proj, module.k_proj, module.v_proj])
            module.project = types.MethodType(fused_project, module)
        elif isinstance(module, mlp):
            module.gate_up_weight = _concat_rows([module.gate_proj, module.up_proj])
            module.forward = types.MethodType(_fused_mlp, module)
        elif isinstance(module, norm):
            module.forward = types.MethodType(_fused_rms_norm, module)
        else:
            continue
        module.fused = True
        changed += 1
    return changed
