"""Codec decode step on one GPU: our streaming decoder (eager, Triton SnakeBeta, CUDA graphs) vs the official module.

    python tools/bench_codec.py --device cuda --dtype bfloat16 --out bench_codec.json
    TRITON_INTERPRET=1 python tools/bench_codec.py --device cpu --tiny          # CPU smoke test, tiny widths

Random weights at the released decoder config (no download). For each batch B and chunk length T it times one
step of `decode_streams` (B streams, T new frames each, exact carried state) in each mode:

  eager          CodecDecoder.decode_streams as the codec service calls it
  graph          CodecGraphs.decode_streams: the same step replayed from a CUDA graph per (B, T)
  triton         eager with every SnakeBeta through kernels/snakebeta.py
  triton+graph   both
  fused          triton, and each vocoder residual unit's element-wise work fused (codec_graphs.fused_residual_unit:
                 SnakeBeta writes into the conv's [history ‖ new] buffer, conv biases folded into the next kernel)
  fused+graph    both
  fused-cl       the vocoder channels-last (codec_graphs.ChannelsLastVocoder: activations in [B, T, C] memory, each
                 conv a conv2d over channels_last [B, C, 1, T], channels-last SnakeBeta/residual kernels, biases folded)
  fused-cl+graph both (CodecGraphs(channels_last=True))
  official       qwen-tts' Qwen3TTSTokenizerV2Decoder.forward (eager, sdpa attention) on T new frames plus
                 --context frames of re-decoded left context, as chunked streaming with the official module does

and prints new frames/s, step time, TFLOP/s (FLOPs counted by torch's FlopCounterMode) and TB/s (an op-level
traffic model: every non-view op reads its tensor inputs and writes its outputs once), plus a split of the step by
stage (CUDA events between stages of one eager step). On CUDA it also checks that chunked streaming equals the
whole-utterance decode (fp32 and bf16), that graph replay equals eager, and the Triton kernel against its
reference. The official module is imported from the qwen-tts wheel without running the package's __init__ (which
pulls in librosa and the whole inference stack); it needs transformers 4.57.x first on the path.

`--ab window_kernel,rvq_kernel,...` then times the fused-cl+graph step with each of those decoder settings on
against the build with none of them, alternating in this one process (`--ab-rounds`): two processes of one build
autotune their own cuDNN algorithms and differed by 7% (runs 91-92), which a few-percent change cannot be read
against.

Every kernel flag here is opt-in. The codec service's default build is fused-cl(+graph) with
`--fast-sine --window-kernel --rvq-kernel --attention-kernel --transformer-kernels --residual-snake-kernel`
(session 26); `--unit-tail-kernel` is not (run 105: the 128x15 graph step 4.7% longer with it).
"""

import argparse
import functools
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback
import types
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
try:
    import omni.kernels  # noqa: F401  (installed: setuptools maps kernels/ to omni.kernels)
except ModuleNotFoundError:  # a bare checkout (the GPU machine): map it by hand
    import kernels

    sys.modules["omni.kernels"] = kernels

from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig  # noqa: E402
from omni.models.qwen3_tts.codec_checkpoint import TINY_DECODER, tiny_decoder_state  # noqa: E402
from omni.models.qwen3_tts.codec_graphs import (  # noqa: E402
    CodecGraphs,
    codec_step,
    fuse_channels_last,
    fuse_residual_units,
    fuse_snakebeta,
    fuse_transformer,
    plan_replays,
)

# CodecDecoder's kernel switches, so one process can time the step with and without each (--ab).
AB_SETTINGS = CodecDecoder.KERNEL_SWITCHES


MODES = ["eager", "graph", "triton", "triton+graph", "fused", "fused+graph", "fused-cl", "fused-cl+graph", "official"]


# ----------------------------------------------------------------------------------------------------------------
# Models


def our_decoder(cfg: CodecDecoderConfig, dtype: torch.dtype, device: str, seed: int = 0) -> CodecDecoder:
    decoder = CodecDecoder(cfg)
    state = tiny_decoder_state(cfg, torch.Generator().manual_seed(seed))  # speech-like scales, any size
    decoder.load_state_dict({k.removeprefix("decoder."): v for k, v in state.items()})
    return decoder.to(device=device, dtype=dtype).eval()


def official_decoder(ours: CodecDecoder, dtype: torch.dtype, device: str) -> torch.nn.Module:
    """qwen-tts' Qwen3TTSTokenizerV2Decoder with the same config and weights as `ours`."""
    spec = importlib.util.find_spec("qwen_tts")
    if spec is None:
        raise SystemExit("official mode needs qwen-tts==0.1.1 (and transformers 4.57.x) importable")
    # Stub the parent packages so their __init__ (librosa, the inference stack) does not run.
    for name, sub in (
        ("qwen_tts", ""),
        ("qwen_tts.core", "core"),
        ("qwen_tts.core.tokenizer_12hz", "core/tokenizer_12hz"),
    ):
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(spec.submodule_search_locations[0], sub)]
        sys.modules.setdefault(name, package)
    cfg_mod = importlib.import_module("qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2")
    model_mod = importlib.import_module("qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2")
    config = cfg_mod.Qwen3TTSTokenizerV2DecoderConfig(
        **ours.cfg.__dict__, layer_scale_initial_scale=0.01, max_position_embeddings=8000, attention_dropout=0.0
    )
    config._attn_implementation = "sdpa"
    model = model_mod.Qwen3TTSTokenizerV2Decoder(config)
    missing, unexpected = model.load_state_dict(ours.state_dict(), strict=False)
    if unexpected or [k for k in missing if not k.endswith("inv_freq")]:
        raise SystemExit(f"official decoder: missing {missing}, unexpected {unexpected}")
    return model.to(device=device, dtype=dtype).eval()


# ----------------------------------------------------------------------------------------------------------------
# Measurement


class TrafficCounter(TorchDispatchMode):
    """Bytes an eager step moves if every non-view op reads its tensor inputs and writes its outputs once."""

    def __init__(self):
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            tensors = {id(t): t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)}
            self.bytes += sum(t.numel() * t.element_size() for t in tensors.values())
        return out


def count(step) -> tuple[float, float]:
    """(FLOPs, bytes) of one call of `step`."""
    flops = FlopCounterMode(display=False)
    traffic = TrafficCounter()
    try:
        with torch.no_grad(), flops, traffic:
            step()
    except Exception:  # noqa: BLE001 - the timing stays valid without the counts
        traceback.print_exc()
        return float("nan"), float("nan")
    return float(flops.get_total_flops()), float(traffic.bytes)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_step(step, device: str, min_seconds: float, max_iters: int) -> float:
    """Mean seconds per call after one warm-up; at least 3 calls, more until min_seconds or max_iters."""
    step()
    sync(device)
    calls, start = 0, time.perf_counter()
    while calls < 3 or (time.perf_counter() - start < min_seconds and calls < max_iters):
        step()
        calls += 1
        if calls >= 3:
            sync(device)
    sync(device)
    return (time.perf_counter() - start) / calls


def stage_split(stages, device: str) -> dict[str, float]:
    """Milliseconds per stage of one call of `stages(mark)`, from CUDA events recorded at each mark (CPU: clock)."""
    marks: list[tuple[str, object]] = []

    def mark(name: str) -> None:
        if device == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            marks.append((name, event))
        else:
            marks.append((name, time.perf_counter()))

    sync(device)
    mark("start")
    with torch.no_grad():
        stages(mark)
    sync(device)
    split = {}
    for (_, a), (name, b) in zip(marks, marks[1:], strict=False):
        split[name] = a.elapsed_time(b) if device == "cuda" else (b - a) * 1e3
    return split


def official_stages(model, codes: torch.Tensor, mark) -> None:
    """The official forward, stage by stage (same calls as Qwen3TTSTokenizerV2Decoder.forward)."""
    hidden = model.quantizer.decode(codes)
    mark("rvq")
    hidden = model.pre_conv(hidden).transpose(1, 2)
    hidden = model.pre_transformer(inputs_embeds=hidden).last_hidden_state.permute(0, 2, 1)
    mark("transformer")
    for blocks in model.upsample:
        for block in blocks:
            hidden = block(hidden)
    mark("upsample")
    hidden = model.decoder[0](hidden)
    mark("vocoder.in_conv")
    for i, block in enumerate(model.decoder[1:-2]):
        hidden = block(hidden)
        mark(f"vocoder.block{i}")
    model.decoder[-1](model.decoder[-2](hidden)).clamp(-1, 1)
    mark("vocoder.out")


def top_kernels(step, device: str, rows: int = 15) -> str:
    """Table of the CUDA kernels (CPU ops on CPU) of one call of `step`, by total time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CUDA] if device == "cuda" else [ProfilerActivity.CPU]
    step()
    sync(device)
    with profile(activities=activities) as prof, torch.no_grad():
        step()
        sync(device)
    key = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=90)


def random_chunks(batch: int, frames: int, device: str, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2048, (frames, 16), generator=gen).to(device) for _ in range(batch)]


# ----------------------------------------------------------------------------------------------------------------
# Checks (CUDA)


def check_chunked_equals_whole(cfg, device: str, frames: int = 47) -> dict:
    """Whole-utterance decode vs chunks of 1, 15, 15, 16 over 4 streams, fp32 (TF32 off) and bf16."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    codes = torch.randint(0, 2048, (4, frames, 16), generator=torch.Generator().manual_seed(9)).to(device)
    result = {}
    whole = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        decoder = our_decoder(cfg, dtype, device)
        whole[name] = decoder.decode(codes).float()
        state = decoder.new_state(4)
        pieces, start = [], 0
        for n in (1, 15, 15, 16):
            pieces.append(torch.stack(decoder.decode_streams(state, [0, 1, 2, 3], list(codes[:, start : start + n]))))
            start += n
        chunked = torch.cat(pieces, dim=1).float()
        result[f"{name}_chunked_vs_whole_max_abs"] = float((chunked - whole[name]).abs().max())
        del decoder
    result["bf16_whole_vs_fp32_whole_max_abs"] = float((whole["bf16"] - whole["fp32"]).abs().max())
    result["fp32_ok"] = result["fp32_chunked_vs_whole_max_abs"] <= 1e-4
    # bf16: chunking changes matmul/conv shapes, hence rounding; it must add no more error than bf16 itself has.
    result["bf16_ok"] = result["bf16_chunked_vs_whole_max_abs"] <= max(result["bf16_whole_vs_fp32_whole_max_abs"], 1e-2)
    return result


def check_graph_equals_eager(decoder: CodecDecoder, device: str) -> dict:
    """Same 3 steps through eager decode_streams and graph replay: a full bucket and a padded one (chunks 1, 15, 15),
    and 21 streams of mixed chunk lengths over buckets 4 and 16, which `plan_replays` splits over several replays."""
    out = {}
    mixed = [[1] * 21, [15, 7] * 10 + [15], [1, 15, 15] * 7]
    for name, streams, buckets, steps in (
        ("16_in_16", 16, (16,), [[n] * 16 for n in (1, 15, 15)]),
        ("10_in_16", 10, (16,), [[n] * 10 for n in (1, 15, 15)]),
        ("21_split_4_16", 21, (4, 16), mixed),
    ):
        slots = max(streams, *buckets) + 1  # the last one is the graphs' scratch slot
        eager_state = decoder.new_state(slots)
        graphs = CodecGraphs(decoder, decoder.new_state(slots), buckets=buckets, chunk_lengths=(1, 15))
        worst_wav, replays = 0.0, []
        for step, lengths in enumerate(steps):
            full = random_chunks(streams, max(lengths), device, seed=100 + step)
            chunks = [c[:n] for c, n in zip(full, lengths, strict=True)]
            want = decoder.decode_streams(eager_state, list(range(streams)), chunks)
            # host codes, as the service hands them over (decode_step stages numpy or CPU tensors)
            got = graphs.decode_streams(list(range(streams)), [c.cpu() for c in chunks])
            replays.append([(b, t, len(rows)) for b, t, rows in plan_replays(lengths, graphs.replay_ms)])
            diffs = [float((w.float() - g.float()).abs().max()) for w, g in zip(want, got, strict=True)]
            worst_wav = max(worst_wav, *diffs)
        worst_state = max(
            float((a[:streams].float() - b[:streams].float()).abs().max())
            for a, b in zip(eager_state.history, graphs.state.history, strict=True)
        )
        worst_state = max(
            worst_state, float((eager_state.key[:, :streams] - graphs.state.key[:, :streams]).abs().max())
        )
        out[name] = {"wav_max_abs": worst_wav, "state_max_abs": worst_state, "replays": replays}
        del graphs
    # Same batch shape, same kernels: bitwise. Other shapes (padded or split) run other kernels: in bf16 they differ
    # by rounding, which for this decoder reaches 0.04 between bf16 and fp32 decodes of the same codes (check
    # chunked_vs_whole); run 19's split case differed by 0.023, above the 0.02 this bound had before. The fp32
    # exactness of split steps is tested on CPU (tests/test_codec_graphs.py).
    out["ok"] = out["16_in_16"]["wav_max_abs"] == 0.0 and all(
        out[name]["wav_max_abs"] <= 5e-2 for name in ("10_in_16", "21_split_4_16")
    )
    return out


def check_snakebeta_kernel(device: str) -> dict:
    from omni.kernels.snakebeta import snakebeta, snakebeta_reference

    worst = {"fp32_rel": 0.0, "bf16_rel": 0.0}  # |got - want| / max(|want|, 1e-3)
    gen = torch.Generator().manual_seed(3)
    for shape in ((1, 1, 1), (3, 5, 129), (4, 2, 1025), (2, 96, 28801), (256, 96, 1920 * 15)):
        x = (torch.randn(shape, generator=gen) * 3).to(device)
        alpha, beta = (torch.randn(shape[1], generator=gen) * 0.5).to(device), (torch.randn(shape[1]) * 0.5).to(device)
        want = snakebeta_reference(x, alpha, beta)
        rel = ((snakebeta(x, alpha, beta) - want).abs() / want.abs().clamp(min=1e-3)).max()
        worst["fp32_rel"] = max(worst["fp32_rel"], float(rel))
        xb = x.bfloat16()
        want = snakebeta_reference(xb.float(), alpha, beta)
        rel = ((snakebeta(xb, alpha, beta).float() - want).abs() / want.abs().clamp(min=1e-3)).max()
        worst["bf16_rel"] = max(worst["bf16_rel"], float(rel))
    # bf16 (the served path): within half a bf16 ulp of the fp32 reference, i.e. correctly rounded up to ties. fp32 is
    # reported only: the kernel's tl.sin is not the libm sin, and the fp32 decoder keeps the PyTorch SnakeBeta.
    worst["ok"] = worst["bf16_rel"] <= 2**-8 + 1e-6
    return worst


def check_channels_last(cfg, device: str, fast_sine: bool = False, frames: int = 47) -> dict:
    """Channels-last vocoder on 4 streams x 47 frames: chunks 1, 15, 15, 16 = whole decode, and its whole decode against
    the default decoder's, fp32 (TF32 off) and bf16."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    codes = torch.randint(0, 2048, (4, frames, 16), generator=torch.Generator().manual_seed(9)).to(device)
    result, default = {}, {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        decoder = our_decoder(cfg, dtype, device)
        default[name] = decoder.decode(codes).float()
        fuse_channels_last(decoder, fast_sine=fast_sine)
        whole = decoder.decode(codes).float()
        state = decoder.new_state(4)
        pieces, start = [], 0
        for n in (1, 15, 15, 16):
            pieces.append(torch.stack(decoder.decode_streams(state, [0, 1, 2, 3], list(codes[:, start : start + n]))))
            start += n
        result[f"{name}_chunked_vs_whole_max_abs"] = float((torch.cat(pieces, dim=1).float() - whole).abs().max())
        result[f"{name}_vs_default_max_abs"] = float((whole - default[name]).abs().max())
        result[f"{name}_vs_fp32_default_max_abs"] = float((whole - default["fp32"]).abs().max())
        del decoder
    bf16_default_error = float((default["bf16"] - default["fp32"]).abs().max())
    result["bf16_default_vs_fp32_default_max_abs"] = bf16_default_error
    # fp32: chunking exact as in the default path; against the default decoder only reported (tl.sin is not libm's).
    result["fp32_ok"] = result["fp32_chunked_vs_whole_max_abs"] <= 1e-4
    # bf16: chunking adds no more error than bf16 itself has (as check_chunked_equals_whole), and the channels-last
    # decode is about as close to the fp32 decode as the default bf16 one (its roundings differ: folded biases, other
    # conv algorithms; 1.5x leaves room for max-abs noise).
    result["bf16_ok"] = result["bf16_chunked_vs_whole_max_abs"] <= max(bf16_default_error, 1e-2) and result[
        "bf16_vs_fp32_default_max_abs"
    ] <= 1.5 * max(bf16_default_error, 1e-2)
    return result


UNEVEN_PLAN = [[1, 2, 4, 15, 15, 0], [15, 15, 15, 1, 0, 15], [15, 8, 15, 15, 15, 15], [16, 15, 13, 15, 15, 15]]


def decode_uneven(decoder: CodecDecoder, codes: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """codes [6, 47, 16] decoded by UNEVEN_PLAN (rows padded, a stream left out of a step, the window sliding) in
    slots 1..6: the waveforms and every state tensor."""
    state, done, wavs = decoder.new_state(7), [0] * 6, []
    for sizes in UNEVEN_PLAN:
        active = [i for i, n in enumerate(sizes) if n]
        chunks = [codes[i, done[i] : done[i] + sizes[i]] for i in active]
        wavs += decoder.decode_streams(state, [i + 1 for i in active], chunks)
        done = [d + n for d, n in zip(done, sizes, strict=True)]
    return wavs, state.tensors()


def compare_builds(cfg, device: str, build, base=None) -> dict:
    """The decoder as built by `build(decoder)` against the plain one (both first built by `base`, if given) on
    decode_uneven, fp32 (TF32 off) and bf16: whether waveforms and state are bitwise equal, the largest waveform
    difference, and the bf16 decoder's own error against fp32 (the scale a bf16 difference is judged by)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    codes = torch.randint(0, 2048, (6, 47, 16), generator=torch.Generator().manual_seed(11)).to(device)

    def max_abs(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
        return max(float((x.float() - y.float()).abs().max()) for x, y in zip(a, b, strict=True))

    result, wavs = {}, {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        runs = []
        for built in (False, True):
            decoder = our_decoder(cfg, dtype, device)
            if base is not None:
                base(decoder)
            if built:
                build(decoder)
            runs.append(decode_uneven(decoder, codes))
            del decoder
        (want, want_state), (got, got_state) = runs
        wavs[name], wavs[f"{name}_built"] = want, got
        result[f"{name}_wav_equal"] = all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
        result[f"{name}_state_equal"] = all(torch.equal(g, w) for g, w in zip(got_state, want_state, strict=True))
        result[f"{name}_wav_max_abs"] = max_abs(got, want)
    result["bf16_plain_vs_fp32_max_abs"] = max_abs(wavs["bf16"], wavs["fp32"])
    result["bf16_built_vs_fp32_max_abs"] = max_abs(wavs["bf16_built"], wavs["fp32"])
    return result


def switched_on(setting: str):
    """A compare_builds `build` that turns one decoder kernel setting of AB_SETTINGS on."""

    def build(decoder: CodecDecoder) -> None:
        setattr(decoder, setting, True)

    return build


def check_bitwise(cfg, device: str, build, base=None) -> dict:
    """A build that must not change a bit (the window and RVQ kernels: copies, and the same additions in the same
    order; the residual SnakeBeta kernel over the channels-last `base`): waveforms and the whole state equal, fp32
    and bf16."""
    result = compare_builds(cfg, device, build, base)
    result["ok"] = all(result[f"{name}_{part}_equal"] for name in ("fp32", "bf16") for part in ("wav", "state"))
    return result


def check_close(cfg, device: str, build, base=None) -> dict:
    """A build whose sums run in another order (the transformer's fused kernels, the attention kernel, the unit-tail
    GEMM over the channels-last `base`): fp32 within 1e-4 (as chunked against whole); in bf16 about as close to the
    fp32 decode as the plain bf16 one (as check_channels_last: 1.5x leaves room for max-abs noise)."""
    result = compare_builds(cfg, device, build, base)
    bf16_error = max(result["bf16_plain_vs_fp32_max_abs"], 1e-2)
    result["ok"] = result["fp32_wav_max_abs"] <= 1e-4 and result["bf16_built_vs_fp32_max_abs"] <= 1.5 * bf16_error
    return result


def check_channels_last_kernels(device: str, fast_sine: bool = False) -> dict:
    """The channels-last SnakeBeta (+ bias) and bias + residual kernels against their references, bf16 and fp32,
    on channels-last inputs sliced along T (as the vocoder feeds them) up to the 256x15 step's last block."""
    from omni.kernels.channels_last import bias_residual_cl, snakebeta_cl
    from omni.kernels.snakebeta import bias_residual_reference, snakebeta_reference

    worst = {"snakebeta_fp32_rel": 0.0, "snakebeta_bf16_rel": 0.0, "bias_residual_bf16_rel": 0.0}
    gen = torch.Generator().manual_seed(4)
    for b, c, t in ((1, 1, 1), (3, 5, 129), (4, 96, 1025), (2, 768, 1201), (256, 96, 1920 * 15)):
        x = (torch.randn(b, t + 2, c, generator=gen) * 3).to(device).transpose(1, 2)[..., 1 : t + 1]
        y = (torch.randn(b, t, c, generator=gen) * 3).to(device).transpose(1, 2)
        alpha, beta, bias = ((torch.randn(c, generator=gen) * 0.5).to(device) for _ in range(3))
        want = snakebeta_reference(x, alpha, beta, bias)
        got = snakebeta_cl(x, alpha, beta, bias=bias, fast_sin=fast_sine)
        rel = ((got - want).abs() / want.abs().clamp(min=1e-3)).max()
        worst["snakebeta_fp32_rel"] = max(worst["snakebeta_fp32_rel"], float(rel))
        xb, yb = x.bfloat16(), y.bfloat16()
        want = snakebeta_reference(xb.float(), alpha, beta, bias)
        got = snakebeta_cl(xb, alpha, beta, bias=bias, fast_sin=fast_sine).float()
        rel = ((got - want).abs() / want.abs().clamp(min=1e-3)).max()
        worst["snakebeta_bf16_rel"] = max(worst["snakebeta_bf16_rel"], float(rel))
        want = bias_residual_reference(xb.float(), yb.float(), bias)
        rel = ((bias_residual_cl(xb, yb, bias).float() - want).abs() / want.abs().clamp(min=1e-3)).max()
        worst["bias_residual_bf16_rel"] = max(worst["bias_residual_bf16_rel"], float(rel))
        del x, y, xb, yb, want
    # bf16: correctly rounded up to ties (half a bf16 ulp) against the fp32 reference; fp32 reported only (tl.sin).
    worst["ok"] = max(worst["snakebeta_bf16_rel"], worst["bias_residual_bf16_rel"]) <= 2**-8 + 1e-6
    return worst


# ----------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 15])
    parser.add_argument("--context", type=int, default=12, help="left-context frames the official module re-decodes")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {MODES}")
    parser.add_argument("--min-seconds", type=float, default=1.0, help="time each step at least this long")
    parser.add_argument("--max-iters", type=int, default=20)
    parser.add_argument("--tiny", action="store_true", help="tiny widths (CPU smoke test)")
    parser.add_argument("--no-checks", action="store_true")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="let cuDNN time its conv algorithms per shape")
    parser.add_argument(
        "--profile", action="store_true", help="top CUDA kernels of an eager step, largest batch, per chunk length"
    )
    parser.add_argument(
        "--fast-sine", action="store_true", help="channels-last SnakeBeta with sin.approx (the codec's fast_sine)"
    )
    parser.add_argument(
        "--window-kernel",
        action="store_true",
        help="the transformer's K/V windows through kernels/codec_window.py in every mode (the codec's window_kernel)",
    )
    parser.add_argument(
        "--attention-kernel",
        action="store_true",
        help="the transformer's attention through kernels/codec_attention.py in every mode (the codec's "
        "attention_kernel)",
    )
    parser.add_argument(
        "--rvq-kernel",
        action="store_true",
        help="the RVQ decode through kernels/rvq_lookup.py in every mode (the codec's rvq_kernel)",
    )
    parser.add_argument(
        "--transformer-kernels",
        action="store_true",
        help="the transformer through the talker's fused kernels in every mode (the codec's transformer_kernels)",
    )
    parser.add_argument(
        "--residual-snake-kernel",
        action="store_true",
        help="each residual add also writes the next SnakeBeta, in the fused-cl modes (the codec's "
        "residual_snake_kernel)",
    )
    parser.add_argument(
        "--unit-tail-kernel",
        action="store_true",
        help="each residual unit's tail (SnakeBeta, conv2, add) as one Triton GEMM, in the fused-cl modes (the "
        "codec's unit_tail_kernel)",
    )
    parser.add_argument(
        "--conv1-kernel",
        action="store_true",
        help="each residual unit's dilated conv1, its bias and the next SnakeBeta as one Triton implicit GEMM, in the "
        "fused-cl modes (the codec's conv1_kernel)",
    )
    parser.add_argument(
        "--conv2-kernel",
        action="store_true",
        help="each residual unit's 1x1 conv2, the residual add and the next SnakeBeta as one Triton GEMM, in the "
        "fused-cl modes (the codec's conv2_kernel)",
    )
    parser.add_argument(
        "--transposed-kernel",
        action="store_true",
        help="each vocoder block's transposed conv as a 2-tap Triton implicit GEMM, in the fused-cl modes (the "
        "codec's transposed_kernel)",
    )
    parser.add_argument(
        "--history-kernel",
        action="store_true",
        help="the stateful convs' histories through kernels/codec_window.copy_history in every mode (the codec's "
        "history_kernel)",
    )
    parser.add_argument(
        "--window-pair-kernel",
        action="store_true",
        help="a layer's K and V windows by one kernel launch each way, in every mode (the codec's window_pair_kernel)",
    )
    parser.add_argument(
        "--history-swap-kernel",
        action="store_true",
        help="each conv's history both ways by one launch, in every mode (the codec's history_swap_kernel)",
    )
    parser.add_argument(
        "--upsample-channels-last",
        action="store_true",
        help="the upsamplers in channels-last memory as the vocoder, in the fused-cl modes (the codec's "
        "upsample_channels_last)",
    )
    parser.add_argument(
        "--qk-rope-kernel",
        action="store_true",
        help="RoPE of a layer's q and k by one launch, in every mode (the codec's qk_rope_kernel; needs "
        "--transformer-kernels to act)",
    )
    parser.add_argument(
        "--add-norm-kernel",
        action="store_true",
        help="the transformer's residual adds each in one kernel with the next RMSNorm, in every mode (the codec's "
        "add_norm_kernel)",
    )
    parser.add_argument(
        "--ab",
        default="",
        help=f"comma-separated decoder settings of {AB_SETTINGS}: after the modes, the fused-cl+graph step with each "
        "on against the build without any of them, alternating in this process (same cuDNN algorithms each side); "
        "a side of several settings on together joins them with '+' (conv1_kernel,conv1_kernel+conv2_kernel)",
    )
    parser.add_argument("--ab-rounds", type=int, default=3, help="rounds of --ab (each times every side once)")
    parser.add_argument("--out", help="write all results as JSON here")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    ab_sides = [side for side in args.ab.split(",") if side]
    ab_settings = sorted({name for side in ab_sides for name in side.split("+")})
    if unknown := set(ab_settings) - set(AB_SETTINGS):
        parser.error(f"unknown --ab settings {sorted(unknown)}; choose from {AB_SETTINGS}")
    if ab_settings and not {"fused-cl", "fused-cl+graph"} & set(modes):
        parser.error("--ab times the fused-cl+graph step: it needs fused-cl or fused-cl+graph in --modes")
    device, dtype = args.device, getattr(torch, args.dtype)
    if device == "cpu" and any("graph" in m for m in modes):
        modes = [m for m in modes if "graph" not in m]
        print("cpu: no CUDA graphs, graph modes left out", flush=True)
    cfg = CodecDecoderConfig(**TINY_DECODER) if args.tiny else CodecDecoderConfig()
    torch.backends.cudnn.benchmark = args.cudnn_benchmark

    env = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "dtype": args.dtype,
        "config": "tiny" if args.tiny else "released",
        "cudnn_benchmark": args.cudnn_benchmark,
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        pass
    print(json.dumps(env), flush=True)
    results: dict = {
        "env": env,
        "args": vars(args),
        "rows": [],
        "stages": {},
        "checks": {},
        "errors": {},
        "profiles": {},
    }

    decoder = our_decoder(cfg, dtype, device)
    official = official_decoder(decoder, dtype, device) if "official" in modes else None
    # Each kernel switch from its flag, after the official copy (which takes only the weights); residual_snake_kernel,
    # unit_tail_kernel and upsample_channels_last act on the channels-last vocoder only; transformer_kernels below, to
    # report what it fused.
    for name in AB_SETTINGS:
        if name != "transformer_kernels":
            setattr(decoder, name, getattr(args, name))
    if args.transformer_kernels:
        print(json.dumps({"transformer_modules_fused": fuse_transformer(decoder)}), flush=True)
    if official is not None:
        import transformers

        env["transformers"] = transformers.__version__
    spf = cfg.samples_per_frame

    def record(mode: str, batch: int, chunk: int, seconds: float, flops: float, nbytes: float) -> None:
        row = {
            "mode": mode,
            "batch": batch,
            "chunk": chunk,
            "step_ms": round(seconds * 1e3, 3),
            "new_frames_per_s": round(batch * chunk / seconds, 1),
            "audio_s_per_s": round(batch * chunk * spf / 24000 / seconds, 1),
            "gflop_per_new_frame": round(flops / (batch * chunk) / 1e9, 3),
            "tflop_per_s": round(flops / seconds / 1e12, 2),
            "tb_per_s": round(nbytes / seconds / 1e12, 3),
        }
        results["rows"].append(row)
        print(json.dumps(row), flush=True)

    def time_graph(batch: int, chunk: int, channels_last: bool) -> float:
        """Seconds of one graph-replayed step of `batch` rows of `chunk` frames, the decoder as it is now (on CPU,
        --ab's smoke test, CodecGraphs runs the same step eagerly)."""
        chunks = random_chunks(batch, chunk, device, seed=batch + chunk)
        host_chunks = [c.cpu() for c in chunks]  # as the service hands them over (staged, one copy a replay)
        graphs = CodecGraphs(
            decoder,
            decoder.new_state(batch + 1),
            buckets=(batch,),
            chunk_lengths=(chunk,),
            channels_last=channels_last,
            capture=device == "cuda",
        )
        step = functools.partial(graphs.decode_streams, list(range(batch)), host_chunks)
        return time_step(step, device, args.min_seconds, args.max_iters)

    def measure(mode: str, batch: int, chunk: int) -> None:
        slots = list(range(batch))
        chunks = random_chunks(batch, chunk, device, seed=batch + chunk)
        if mode.endswith("graph"):
            seconds = time_graph(batch, chunk, channels_last=mode.startswith("fused-cl"))
        else:
            state = decoder.new_state(batch)
            seconds = time_step(
                lambda: decoder.decode_streams(state, slots, chunks), device, args.min_seconds, args.max_iters
            )
        rows = torch.arange(batch, device=device)
        frames = torch.full((batch,), chunk, device=device)
        codes = torch.stack(chunks)
        work_state = decoder.new_state(batch)
        flops, nbytes = count(lambda: codec_step(decoder, work_state, codes, rows, frames))
        record(mode, batch, chunk, seconds, flops, nbytes)
        if not mode.endswith("graph"):
            split = stage_split(lambda mark: codec_step(decoder, work_state, codes, rows, frames, mark), device)
            results["stages"][f"{mode} b{batch} t{chunk}"] = split
            print(json.dumps({"stages": f"{mode} b{batch} t{chunk}", **{k: round(v, 3) for k, v in split.items()}}))

    def measure_official(batch: int) -> None:
        codes = torch.stack(random_chunks(batch, 15 + args.context, device, seed=batch)).transpose(1, 2)
        with torch.no_grad():
            seconds = time_step(lambda: official(codes), device, args.min_seconds, args.max_iters)
            flops, nbytes = count(lambda: official(codes))
        record("official", batch, 15, seconds, flops, nbytes)
        split = stage_split(lambda mark: official_stages(official, codes, mark), device)
        name = f"official b{batch} t15+{args.context}"
        results["stages"][name] = split
        print(json.dumps({"stages": name, **{k: round(v, 3) for k, v in split.items()}}), flush=True)

    def profile_ours(mode: str) -> None:
        """Top kernels of one eager step at the largest batch, for each chunk length (a short chunk shows what a
        step costs whatever its length)."""
        batch = max(args.batches)
        for chunk in args.chunks:
            state, chunks = decoder.new_state(batch), random_chunks(batch, chunk, device, seed=1)
            step = functools.partial(decoder.decode_streams, state, list(range(batch)), chunks)
            table = top_kernels(step, device)
            results["profiles"][f"{mode} b{batch} t{chunk}"] = table
            print(f"top kernels, {mode} b{batch} t{chunk}:\n{table}", flush=True)

    def ab(sides: list[str]) -> None:
        """Each side (a decoder setting, or settings joined by '+') against the build without them (every setting
        named off, the rest as configured), in this one process, rounds alternating: the same cuDNN algorithms on
        every side, where two processes of one build differed by 7% (runs 91-92). The fused-cl+graph step at the
        largest batch, each chunk length."""
        before = {name: getattr(decoder, name) for name in ab_settings}
        results["ab_settings"] = {}  # each side's settings as timed
        times: dict = {}
        for _ in range(args.ab_rounds):
            for variant in ("base", *sides):
                for name in ab_settings:
                    setattr(decoder, name, name in variant.split("+"))
                results["ab_settings"][variant] = {name: getattr(decoder, name) for name in AB_SETTINGS}
                for chunk in args.chunks:
                    ms = time_graph(max(args.batches), chunk, channels_last=True) * 1e3
                    times.setdefault(variant, {}).setdefault(str(chunk), []).append(round(ms, 3))
        for name, value in before.items():
            setattr(decoder, name, value)
        results["ab"] = times
        for variant, by_chunk in times.items():
            for chunk, values in by_chunk.items():
                mid, base = statistics.median(values), statistics.median(times["base"][chunk])
                line = {"ab": variant, "batch": max(args.batches), "chunk": int(chunk), "step_ms": values}
                print(json.dumps(line | {"median_ms": mid, "vs_base_pct": round(100 * (mid / base - 1), 2)}))

    def ours(mode: str) -> None:
        for chunk in args.chunks:
            for batch in args.batches:
                measure(mode, batch, chunk)

    def guarded(name: str, fn) -> None:
        """Run one part; a failure is recorded and printed, and the rest of the benchmark still runs."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a benchmark reports every part it could run
            results["errors"][name] = repr(exc)
            traceback.print_exc()
            print(json.dumps({"error": name, "what": repr(exc)}), flush=True)
        if args.out:  # after every part, so a run stopped at its time limit still leaves its numbers
            Path(args.out).write_text(json.dumps(results, indent=2) + "\n")

    def check(name: str, fn) -> None:
        def run() -> None:
            results["checks"][name] = fn()
            print(json.dumps({"check": name, **results["checks"][name]}), flush=True)

        if not args.no_checks and device == "cuda":
            guarded(f"check {name}", run)

    def fuse(name: str, fuser) -> None:
        codes = random_chunks(4, 15, device, seed=5)
        before = torch.stack(decoder.decode_streams(decoder.new_state(4), [0, 1, 2, 3], codes)).float()
        print(json.dumps({f"{name}_modules": fuser(decoder)}), flush=True)
        after = torch.stack(decoder.decode_streams(decoder.new_state(4), [0, 1, 2, 3], codes)).float()
        results["checks"][f"{name}_vs_before"] = {"wav_max_abs": float((before - after).abs().max())}
        print(json.dumps({"check": f"{name}_vs_before", **results["checks"][f"{name}_vs_before"]}), flush=True)

    # The baseline first, then ours from the plainest path up (fusing SnakeBeta changes the decoder in place).
    if official is not None:
        for batch in args.batches:
            guarded(f"official b{batch}", lambda b=batch: measure_official(b))
    for mode in ("eager", "graph"):
        if mode in modes:
            guarded(mode, lambda m=mode: ours(m))
    if args.profile and "eager" in modes:
        guarded("profile eager", lambda: profile_ours("eager"))
    if args.window_kernel:
        check("window_kernel_vs_copies", lambda: check_bitwise(cfg, device, switched_on("window_kernel")))
    if args.attention_kernel:
        check("attention_kernel_vs_sdpa", lambda: check_close(cfg, device, switched_on("attention_kernel")))
    if args.rvq_kernel:
        check("rvq_kernel_vs_lookups", lambda: check_bitwise(cfg, device, switched_on("rvq_kernel")))
    if args.transformer_kernels:
        check("transformer_kernels_vs_eager", lambda: check_close(cfg, device, switched_on("transformer_kernels")))
    fuse_cl = functools.partial(fuse_channels_last, fast_sine=args.fast_sine)
    if args.residual_snake_kernel:
        check(
            "residual_snake_kernel_vs_separate",
            lambda: check_bitwise(cfg, device, switched_on("residual_snake_kernel"), base=fuse_cl),
        )
    # the channels-last vocoder's GEMM kernels: other summation orders than cuDNN's, so close, not bitwise
    gemms = {"unit_tail_kernel": "separate", "conv1_kernel": "separate", "conv2_kernel": "separate"}
    gemms["transposed_kernel"] = "cudnn"
    for name, against in gemms.items():
        if getattr(args, name):
            check(f"{name}_vs_{against}", lambda n=name: check_close(cfg, device, switched_on(n), base=fuse_cl))
    if args.history_kernel:
        check("history_kernel_vs_copies", lambda: check_bitwise(cfg, device, switched_on("history_kernel")))
        check(
            "history_kernel_vs_copies_cl",
            lambda: check_bitwise(cfg, device, switched_on("history_kernel"), base=fuse_cl),
        )
    if args.add_norm_kernel:  # over the fused transformer: the same roundings and norm arithmetic, so the same bits
        fused_transformer = switched_on("transformer_kernels")
        check(
            "add_norm_kernel_vs_separate",
            lambda: check_bitwise(cfg, device, switched_on("add_norm_kernel"), base=fused_transformer),
        )
    if args.window_pair_kernel:  # over the fused transformer too: its new values are a strided slice
        check("window_pair_kernel_vs_copies", lambda: check_bitwise(cfg, device, switched_on("window_pair_kernel")))
        check(
            "window_pair_kernel_vs_copies_fused",
            lambda: check_bitwise(
                cfg, device, switched_on("window_pair_kernel"), base=switched_on("transformer_kernels")
            ),
        )
    if args.history_swap_kernel:
        check("history_swap_kernel_vs_copies", lambda: check_bitwise(cfg, device, switched_on("history_swap_kernel")))
        check(
            "history_swap_kernel_vs_copies_cl",
            lambda: check_bitwise(cfg, device, switched_on("history_swap_kernel"), base=fuse_cl),
        )
    if args.upsample_channels_last:  # not bitwise on the GPU (run 132), within the bf16 decoder's own error
        check(
            "upsample_channels_last_vs_default",
            lambda: check_close(cfg, device, switched_on("upsample_channels_last"), base=fuse_cl),
        )
    if args.qk_rope_kernel:  # over the fused transformer: only its project reads the switch
        check(
            "qk_rope_kernel_vs_apart",
            lambda: check_bitwise(cfg, device, switched_on("qk_rope_kernel"), base=switched_on("transformer_kernels")),
        )
    check("chunked_vs_whole", lambda: check_chunked_equals_whole(cfg, device))
    check("graph_vs_eager", lambda: check_graph_equals_eager(decoder, device))
    if {"triton", "triton+graph", "fused", "fused+graph"} & set(modes):
        check("snakebeta_kernel", lambda: check_snakebeta_kernel(device))
        guarded("fuse triton_snakebeta", lambda: fuse("triton_snakebeta", fuse_snakebeta))
        check("triton_graph_vs_eager", lambda: check_graph_equals_eager(decoder, device))
        for mode in ("triton", "triton+graph"):
            if mode in modes:
                guarded(mode, lambda m=mode: ours(m))
        if args.profile and "triton" in modes:
            guarded("profile triton", lambda: profile_ours("triton"))

    def build(mode: str, fused: str, fuser, graph_check: str, checks: dict | None = None) -> None:
        """A build of ours applied to the decoder in place: its checks, the fusion, graph == eager, then `mode` and
        `mode+graph` (and its profile); nothing of it runs when neither mode was asked for or the fusion failed."""
        if not {mode, f"{mode}+graph"} & set(modes):
            return
        for name, fn in (checks or {}).items():
            check(name, fn)
        guarded(f"fuse {fused}", lambda: fuse(fused, fuser))
        if f"fuse {fused}" in results["errors"]:
            return
        check(graph_check, lambda: check_graph_equals_eager(decoder, device))
        for m in (mode, f"{mode}+graph"):
            if m in modes:
                guarded(m, lambda m=m: ours(m))
        if args.profile and mode in modes:
            guarded(f"profile {mode}", lambda: profile_ours(mode))

    build("fused", "fused_residual_units", fuse_residual_units, "fused_graph_vs_eager")
    # Channels-last on top of whatever build ran last (it replaces the whole vocoder, so the builds before only
    # change the "before" side of its comparison).
    cl_checks = {
        "channels_last_kernels": lambda: check_channels_last_kernels(device, args.fast_sine),
        "channels_last_decoder": lambda: check_channels_last(cfg, device, args.fast_sine),
    }
    build("fused-cl", "channels_last", fuse_cl, "channels_last_graph_vs_eager", cl_checks)

    if ab_sides:
        guarded("ab", lambda: ab(ab_sides))

    print("\nmode          batch chunk   step ms   new frames/s  audio-s/s  GFLOP/frame  TFLOP/s   TB/s")
    for r in results["rows"]:
        print(
            f"{r['mode']:<13} {r['batch']:>5} {r['chunk']:>5} {r['step_ms']:>9.2f} {r['new_frames_per_s']:>14.0f}"
            f" {r['audio_s_per_s']:>10.0f} {r['gflop_per_new_frame']:>12.2f} {r['tflop_per_s']:>8.1f}"
            f" {r['tb_per_s']:>6.2f}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
