"""The Qwen3-TTS talker and its code predictor, batched over cache slots.

One file in the spirit of gpt-fast: RMSNorm, NeoX RoPE, Qwen3 attention (GQA, per-head q/k RMSNorm
before RoPE, no bias), SwiGLU MLP, decoder layers, and the two models built from them.

The talker's interleaved M-RoPE only ever sees three identical position rows in TTS, which makes it
plain NeoX (rotate-half) RoPE over the whole head; tests prove this against the reference.

Every forward works on a `KVCache` of preallocated slots: `x[B, T, H]` belongs to `slots[B]` at
`positions[B, T]`. K/V are written at index == position, and each query attends to the keys of its own
slot at positions <= its own, so stale entries beyond a slot's prefix are never read.

Module names mirror the official checkpoint so that `state_dict()` keys equal the keys under `talker.`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from omni.fp8 import FP8_DTYPE, to_fp8
from omni.models.qwen3_tts.config import CodePredictorConfig, TalkerConfig, TransformerConfig

SHORT_PASS_POSITIONS = 2  # the code predictor's first pass each frame: [past hidden, codebook 0]


@dataclass(frozen=True)
class CacheKernels:
    """The Triton kernels a KVCache's forwards use (CUDA serving); the PyTorch paths are the CPU path and the
    reference. `attention`: passes of at most `positions` positions per slot attend with kernels/decode_attention.py;
    `write`: K and V go into the cache with kernels/kv_write.py; `norm_rope_write`: attention modules fused by
    talker_fused.py apply their q/k norms and RoPE and write K and V in one kernel (kv_write.norm_rope_write_kv);
    `norm_rope_attention` (with both `attention` and `norm_rope_write`): in a one-position pass they do that and attend
    in one kernel (decode_attention.norm_rope_attention)."""

    attention: bool = False
    positions: int = SHORT_PASS_POSITIONS
    write: bool = False
    norm_rope_write: bool = False
    norm_rope_attention: bool = False

    def __post_init__(self) -> None:
        if self.positions < 1:
            raise ValueError(f"CacheKernels.positions must be >= 1, got {self.positions}")
        if self.norm_rope_attention and not (self.attention and self.norm_rope_write):
            raise ValueError("CacheKernels.norm_rope_attention (the runner's norm_rope_attention_kernel) needs the "
                             "decode-attention kernel (attention) and norm_rope_write (the runner's "
                             "norm_rope_write_kernel)")  # fmt: skip


PYTORCH_PATHS = CacheKernels()


class KVCache:
    """Per-slot K/V: k, v are [layers, slots, max_len, kv_heads, head_dim]; cache index == position.

    `kernels.attention`: passes of at most `kernels.positions` positions per slot read K/V in place up to each
    position with the Triton kernel (kernels/decode_attention.py), one kernel row per (slot, position), instead of
    gathering the first `kv_len` positions and masking them (the PyTorch path, kept for CPU, prompts and as the
    reference). 2 positions take the code predictor's first pass of each frame ([past hidden, codebook 0]) too:
    through SDPA its cuDNN kernel tiled 64+ queries for 2 (1.6 of 15 ms of a 512-row talker step on an H200, run 80).
    `kernels.write`: a forward's K and V go into the cache in one Triton copy per layer (kernels/kv_write.py)
    instead of two `index_put`s; the same bits.
    `dtype` float8_e4m3fn (the talker service's `kv_cache_dtype` fp8): the cache stores K and V in fp8, clamped to
    +-448 and rounded to nearest even as they are written (every path: `to_fp8`), and every read upcasts them to the
    forward's dtype (exact). Half the bytes a position of a bf16 cache; not the bits of one.
    """

    def __init__(
        self,
        layers: int,
        slots: int,
        max_len: int,
        kv_heads: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
        kernels: CacheKernels = PYTORCH_PATHS,
    ):
        shape = (layers, slots, max_len, kv_heads, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.kernels = kernels
        # Triton is imported only when asked for: CPU installs need not have it.
        if kernels.attention:
            from omni.kernels.decode_attention import decode_attention, norm_rope_attention

            self.decode_attention, self.norm_rope_attention = decode_attention, norm_rope_attention
        if kernels.write:
            from omni.kernels.kv_write import write_kv

            self.write_kv = write_kv

    @property
    def kernel_positions(self) -> int:
        """The most positions per slot a forward may have to attend through the kernel (0: never)."""
        return self.kernels.positions if self.kernels.attention else 0

    @property
    def num_slots(self) -> int:
        return self.k.shape[1]

    @property
    def max_len(self) -> int:
        return self.k.shape[2]

    def write(self, layer: int, slots: torch.Tensor, positions: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Write k, v [B, T, kv_heads, head_dim] at (slots[B], positions[B, T])."""
        if self.kernels.write:
            self.write_kv(self.k[layer], self.v[layer], slots, positions, k, v)
            return
        rows = slots[:, None]
        self.k[layer, rows, positions] = self._stored(k)
        self.v[layer, rows, positions] = self._stored(v)

    def _stored(self, x: torch.Tensor) -> torch.Tensor:
        """x as the cache stores it: as it is, or `to_fp8` in an fp8 cache (as the kernels' `stored_as`)."""
        return to_fp8(x) if self.k.dtype == FP8_DTYPE else x

    def read(
        self, layer: int, slots: torch.Tensor, kv_len: int, dtype: torch.dtype | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The first kv_len keys and values of each slot (a gathered copy), in `dtype` (None: the cache's)."""
        k, v = self.k[layer, slots, :kv_len], self.v[layer, slots, :kv_len]
        return (k, v) if dtype is None else (k.to(dtype), v.to(dtype))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32, scale in the input dtype (as the reference does).
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rope_frequencies(head_dim: int, theta: float, device: torch.device | str) -> torch.Tensor:
    """NeoX RoPE's inverse frequencies of both halves [head_dim], fp32, made on `device`: the exponents in fp32 (exact
    small integers), the halves concatenated here so the product with the positions is one op."""
    exponents = torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim
    inv_freq = 1.0 / (theta**exponents)
    return torch.cat((inv_freq, inv_freq))


def rope_cos_sin(positions: torch.Tensor, frequencies: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """NeoX RoPE tables for positions [B, T]: cos, sin [B, T, 1, head_dim], computed in fp32.

    Every forward builds them (16 a decode step: the backbone and the code predictor's passes), so in as few ops as
    give the textbook's bits: the integer positions converted inside the product with `rope_frequencies`, and cos and
    sin stored in `dtype` by their own kernels (computed in fp32, rounded on store as a cast rounds).
    """
    angles = positions[:, :, None, None] * frequencies  # [B, T, 1, D], fp32
    if angles.dtype != torch.float32:
        raise ValueError(f"rope_cos_sin: positions of dtype {positions.dtype} give angles in {angles.dtype}")
    cos = torch.cos(angles, out=torch.empty_like(angles, dtype=dtype))
    return cos, torch.sin(angles, out=torch.empty_like(angles, dtype=dtype))


# What every layer of a forward shares (Decoder.attention_inputs): RoPE's (cos, sin) and `visible`.
AttentionInputs = tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        # `project` is replaced by a fused version on CUDA (talker_fused.py); the rest of forward is shared.
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=False)
        self.q_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)

    def project(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """x [B, T, hidden] -> q [B, T, heads, D], k, v [B, T, kv_heads, D]: projections, q/k norms, RoPE."""
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.head_dim))
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim))
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim)
        return apply_rope(q, *rope), apply_rope(k, *rope), v

    def project_write(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        cache: "KVCache",
        layer: int,
        slots: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """q [B, T, heads, D] of `x`; its k and v go into the cache at (slots, positions). Replaced on CUDA by one
        kernel for the whole of it where the cache asks (talker_fused.py)."""
        q, k, v = self.project(x, rope)
        cache.write(layer, slots, positions, k, v)
        return q

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        visible: torch.Tensor,
        cache: KVCache,
        layer: int,
        slots: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """`visible`: the causal mask [B, 1, T, kv_len] (PyTorch path) or each (slot, position)'s length [B, T]
        (decode kernel)."""
        b, t, _ = x.shape
        q = self.project_write(x, rope, cache, layer, slots, positions)
        if visible.dim() == 2:  # one kernel row per (slot, position): keys 0..position of its slot, read in place
            rows = q.reshape(b * t, self.heads, self.head_dim)
            lengths = visible.reshape(-1)  # slot-major, as the rows
            # T rows a slot: the kernel reads row r's slot at slots[r // T] (no copy of the slots repeated)
            out = cache.decode_attention(rows, cache.k[layer], cache.v[layer], slots, lengths, rows_per_slot=t)
            out = out.view(b, t, -1)
        else:
            keys, values = cache.read(layer, slots, visible.shape[-1], q.dtype)
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2), attn_mask=visible, enable_gqa=True
            ).transpose(1, 2)
        return self.o_proj(out.reshape(b, t, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, rope, visible, cache, layer, slots, positions) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope, visible, cache, layer, slots, positions)
        return x + self.mlp(self.post_attention_layernorm(x))


def _check_shapes(
    x: torch.Tensor, positions: torch.Tensor, cache: KVCache, slots: torch.Tensor, kv_len: int, hidden: int
) -> None:
    """Shape checks only (no device sync): a wrong call fails here rather than as silent garbage."""
    if x.dim() != 3 or x.shape[-1] != hidden:
        raise ValueError(f"x must be [B, T, {hidden}], got {tuple(x.shape)}")
    if tuple(positions.shape) != tuple(x.shape[:2]):
        raise ValueError(f"positions must be [B, T] = {tuple(x.shape[:2])}, got {tuple(positions.shape)}")
    if tuple(slots.shape) != (x.shape[0],):
        raise ValueError(f"slots must be [B] = [{x.shape[0]}], got {tuple(slots.shape)}")
    if not 0 < kv_len <= cache.max_len:
        raise ValueError(f"kv_len {kv_len} must be in 1..{cache.max_len} (the cache length)")


class Decoder(nn.Module):
    """A Qwen3 stack over a slot cache: layers + final norm (the checkpoint's `model.` subtree, minus embeddings)."""

    # Keep RoPE's frequencies per device (6 ops fewer a forward, 96 a decode step: tools/census_talker_step.py); off
    # only to time the change (tools/bench_talker_step.py's +rope-per-forward).
    keep_rope_frequencies = True

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self._rope_frequencies: dict[torch.device, torch.Tensor] = {}

    def new_cache(
        self,
        slots: int,
        max_len: int,
        dtype: torch.dtype,
        device: torch.device | str,
        kernels: CacheKernels = PYTORCH_PATHS,
    ) -> KVCache:
        c = self.cfg
        return KVCache(c.num_hidden_layers, slots, max_len, c.num_key_value_heads, c.head_dim, dtype, device, kernels)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        slots: torch.Tensor,
        kv_len: int | None = None,
        inputs: AttentionInputs | None = None,
    ) -> torch.Tensor:
        """x [B, T, H] at positions [B, T] of slots [B] -> final-normed hidden [B, T, H].

        `kv_len` bounds the keys read (it must exceed every position in `positions`); default: the whole cache.
        `inputs`: `attention_inputs(positions, cache, kv_len, x.dtype)` when the caller holds them (or their first B
        rows); default: made here.
        """
        rope, visible = self.shared_inputs(x, positions, cache, slots, kv_len, inputs)
        for i, layer in enumerate(self.layers):
            x = layer(x, rope, visible, cache, i, slots, positions)
        return self.norm(x)

    def rope_frequencies(self, device: torch.device) -> torch.Tensor:
        """`rope_frequencies` for this stack on `device`, kept after the first call made outside a CUDA graph capture.

        Made there by the same ops a forward would run, so the same bits (a buffer made on the CPU and moved could
        differ in the last bit from CUDA's pow). Not kept from inside a capture: it would be filled only at a replay.
        Never replaced once kept: a captured graph reads it where it lies.
        """
        frequencies = self._rope_frequencies.get(device)
        if frequencies is None:
            frequencies = rope_frequencies(self.cfg.head_dim, self.cfg.rope_theta, device)
            capturing = device.type == "cuda" and torch.cuda.is_current_stream_capturing()
            if self.keep_rope_frequencies and not capturing:
                self._rope_frequencies[device] = frequencies
        return frequencies

    def attention_inputs(
        self, positions: torch.Tensor, cache: KVCache, kv_len: int | None, dtype: torch.dtype
    ) -> AttentionInputs:
        """What every layer of a forward at `positions` [B, T] shares: RoPE's (cos, sin) and `visible` (see
        Attention.forward), every tensor with B rows first. A pure function of the positions: a caller whose
        positions repeat (the code predictor's, the same every frame) makes them once and passes their first B rows."""
        kv_len = cache.max_len if kv_len is None else kv_len
        rope = rope_cos_sin(positions, self.rope_frequencies(positions.device), dtype)
        # Causal over the slot's own prefix: key index (== position) <= query position.
        if positions.shape[1] <= cache.kernel_positions:
            visible = positions + 1  # lengths: the kernel reads keys 0..position in place
        else:
            key_pos = torch.arange(kv_len, device=positions.device)
            visible = (key_pos[None, None, :] <= positions[:, :, None])[:, None]  # [B, 1, T, kv_len]
        return rope, visible

    def shared_inputs(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        slots: torch.Tensor,
        kv_len: int | None,
        inputs: AttentionInputs | None,
    ) -> AttentionInputs:
        """A forward's checks, then its `attention_inputs` (made here unless given)."""
        _check_shapes(x, positions, cache, slots, cache.max_len if kv_len is None else kv_len, self.cfg.hidden_size)
        return self.attention_inputs(positions, cache, kv_len, x.dtype) if inputs is None else inputs


class TalkerBackbone(Decoder):
    """`talker.model`: the decoder plus the codec and text embedding tables."""

    def __init__(self, cfg: TalkerConfig):
        super().__init__(cfg)
        self.codec_embedding = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.text_embedding = nn.Embedding(cfg.text_vocab_size, cfg.text_hidden_size)


class ResizeMLP(nn.Module):
    """`text_projection`: fc1 (+bias), SiLU, fc2 (+bias); maps text_hidden_size to the talker width."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int):
        super().__init__()
        self.linear_fc1 = nn.Linear(in_dim, hidden, bias=True)
        self.linear_fc2 = nn.Linear(hidden, out_dim, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.silu(self.linear_fc1(x)))


class PredictorBackbone(Decoder):
    """`code_predictor.model`: the decoder plus the embeddings of codebooks 1..15 (at the talker's width)."""

    def __init__(self, cfg: CodePredictorConfig, talker_hidden: int):
        super().__init__(cfg)
        self.codec_embedding = nn.ModuleList(
            nn.Embedding(cfg.vocab_size, talker_hidden) for _ in range(cfg.num_code_groups - 1)
        )


class CodePredictor(nn.Module):
    """The depth transformer writing codebooks 1..15 of a frame.

    Per frame its sequence is [past_hidden, E0(cb0), E1(cb1), ..., E14(cb14)] (talker width), projected
    to its own width; the output at position j (1..15) through `lm_head[j-1]` gives codebook j.
    Positions restart at 0 every frame, so its cache holds `num_code_groups` positions per slot.
    """

    def __init__(self, cfg: CodePredictorConfig, talker_hidden: int):
        super().__init__()
        self.cfg = cfg
        self.model = PredictorBackbone(cfg, talker_hidden)
        self.lm_head = nn.ModuleList(
            nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False) for _ in range(cfg.num_code_groups - 1)
        )
        if cfg.hidden_size != talker_hidden:
            self.small_to_mtp_projection = nn.Linear(talker_hidden, cfg.hidden_size, bias=True)
        else:
            self.small_to_mtp_projection = nn.Identity()

    @property
    def codec_embedding(self) -> nn.ModuleList:
        """Embeddings of codebooks 1..15 (index q-1), at the talker's width."""
        return self.model.codec_embedding

    def proj(self, x: torch.Tensor) -> torch.Tensor:
        """Talker width -> predictor width (identity when they are equal)."""
        return self.small_to_mtp_projection(x)

    @torch.no_grad()
    def stacked_codec_embeddings(self) -> torch.Tensor:
        """Codebooks 1..15's embedding tables as one [15, vocab, talker width] tensor, for kernels/frame_embedding.py's
        frame_sum. Each nn.Embedding's weight becomes a view into it (as fuse_talker_kernels does for the fused
        weights), so no copy is kept; called again, the same tensor."""
        weights = [e.weight for e in self.codec_embedding]
        stacked = self.__dict__.get("_stacked_embeddings")  # not a buffer: the checkpoint's keys stay as they are
        if stacked is not None and all(w.data_ptr() == stacked[q].data_ptr() for q, w in enumerate(weights)):
            return stacked  # still what the weights are views of (a cast or a load since would have replaced them)
        stacked = torch.stack([w.detach() for w in weights])
        for q, e in enumerate(self.codec_embedding):
            e.weight = nn.Parameter(stacked[q], requires_grad=False)
        self.__dict__["_stacked_embeddings"] = stacked
        return stacked

    @torch.no_grad()
    def projected_embeddings(self) -> list[nn.Embedding] | None:
        """Codebooks 1..14's embeddings (index q-1) already projected to the predictor's width: proj(E_q(id)) is row
        `id` of proj(E_q.weight), so a pass after the first can look its input up instead of running the projection
        GEMM on it. Each table is made in fp32 and rounded once, as a GEMM with fp32 accumulation rounds its output;
        only the order of the fp32 sums differs from the GEMM's. None where the widths are equal (no projection).
        Codebook 15's embedding feeds only the talker, so it has no table."""
        if isinstance(self.small_to_mtp_projection, nn.Identity):
            return None
        linear = self.small_to_mtp_projection
        weight, bias = linear.weight.float(), None if linear.bias is None else linear.bias.float()
        return [
            nn.Embedding.from_pretrained(F.linear(e.weight.float(), weight, bias).to(e.weight.dtype), freeze=True)
            for e in self.codec_embedding[: self.cfg.num_code_groups - 2]
        ]

    def new_cache(
        self, slots: int, dtype: torch.dtype, device: torch.device | str, kernels: CacheKernels = PYTORCH_PATHS
    ) -> KVCache:
        return self.model.new_cache(slots, self.cfg.num_code_groups, dtype, device, kernels)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        slots: torch.Tensor,
        kv_len: int | None = None,
        inputs: AttentionInputs | None = None,
        projected: bool = False,
    ) -> torch.Tensor:
        """x [B, T, talker_hidden] (unprojected) at positions [B, T] -> final-normed hidden [B, T, predictor_hidden]
        (`inputs` as for Decoder.forward). `projected`: x is already at the predictor's width (`projected_embeddings`
        rows)."""
        return self.model(x if projected else self.proj(x), positions, cache, slots, kv_len, inputs)

    def logits(self, h: torch.Tensor, codebook: int) -> torch.Tensor:
        """Logits of codebook `codebook` (1..15) from the hidden state at position `codebook`."""
        return self.lm_head[codebook - 1](h)


class Qwen3TTSTalker(nn.Module):
    """`talker.*` of the checkpoint: backbone, text projection, codec head and code predictor."""

    gather_lookups = True  # `lookup`'s gather for more than one id (bench_talker_step's +embedding-lookup: off)

    def __init__(self, cfg: TalkerConfig):
        super().__init__()
        if cfg.code_predictor is None:
            raise ValueError("TalkerConfig.code_predictor is required")
        self.cfg = cfg
        self.model = TalkerBackbone(cfg)
        self.text_projection = ResizeMLP(cfg.text_hidden_size, cfg.text_hidden_size, cfg.hidden_size)
        self.codec_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.code_predictor = CodePredictor(cfg.code_predictor, cfg.hidden_size)

    def keep_rope_frequencies(self, keep: bool) -> None:
        """Whether both stacks keep RoPE's frequencies per device (the default) or make them every forward (to time
        the change: bench_talker_step's +rope-per-forward); what they kept is dropped. Call before capturing graphs:
        a graph reads a kept tensor where it lies."""
        for stack in (self.model, self.code_predictor.model):
            stack.keep_rope_frequencies = keep
            stack._rope_frequencies.clear()

    def new_cache(
        self,
        slots: int,
        max_len: int,
        dtype: torch.dtype,
        device: torch.device | str,
        kernels: CacheKernels = PYTORCH_PATHS,
    ) -> KVCache:
        return self.model.new_cache(slots, max_len, dtype, device, kernels)

    def lookup(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        """table(ids), the same rows: for more than one id as `weight[ids]`, PyTorch's index kernel (1.4 us for 2-64
        ids on an H200, run 169), where nn.Embedding's index_select takes 2.1-7.4 us for 2-16 ids; one id through
        the table (1.6 us against 2.6). The ids must lie in the table, as every caller's do (drawn, tokenized, or
        checked by the prompt builder): a negative one would wrap where nn.Embedding refuses it."""
        if self.gather_lookups and ids.numel() > 1:
            return table.weight[ids]
        return table(ids)

    def embed_text(self, ids: torch.Tensor) -> torch.Tensor:
        """Text-track vectors: text_projection(text_embedding(ids))."""
        return self.text_projection(self.lookup(self.model.text_embedding, ids))

    def embed_codec(self, ids: torch.Tensor) -> torch.Tensor:
        """Codec-track vectors: rows of the talker's codec_embedding (cb0 codes and control/speaker/language ids)."""
        return self.lookup(self.model.codec_embedding, ids)

    def embed_frame(self, codes: torch.Tensor) -> torch.Tensor:
        """Sum of the 16 codebook embeddings of frames codes[..., 16] -> [..., H]."""
        x = self.embed_codec(codes[..., 0])
        for q, table in enumerate(self.code_predictor.codec_embedding, start=1):
            x = x + self.lookup(table, codes[..., q])
        return x

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        slots: torch.Tensor,
        kv_len: int | None = None,
        inputs: AttentionInputs | None = None,
    ) -> torch.Tensor:
        """x [B, T, H] at positions [B, T] of slots [B] -> final-normed hidden [B, T, H]. `inputs`: the forward's
        attention inputs when the caller made them (Decoder.forward)."""
        return self.model(x, positions, cache, slots, kv_len, inputs)

    def codec_logits(self, h: torch.Tensor) -> torch.Tensor:
        """Codebook-0 logits [.., vocab_size] from final-normed hidden states."""
        return self.codec_head(h)
