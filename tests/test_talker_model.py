"""Talker and code predictor against the official implementation (fp32, eager), and slot batching.

Reference runs are expensive (~10 s to import qwen-tts), so each module-scoped fixture sends all its work
to the reference in one process.
"""

import functools

import numpy as np
import pytest
import torch

from omni.models.qwen3_tts.config import Qwen3TTSConfig
from omni.models.qwen3_tts.loader import load_qwen3_tts
from omni.models.qwen3_tts.talker import Qwen3TTSTalker, apply_rope, rope_cos_sin, rope_frequencies
from omni.models.qwen3_tts.tiny import GENERATION_CONFIG, tiny_config, write_tokenizer_files
from tests.reference import run_reference

RTOL = 1e-4
T = 9  # prompt length of the parity inputs
# Widths for checkpoints the reference writes with save_pretrained: (variant, sizes).
REF_WIDTHS = [
    ("custom_voice", {}),  # talker 64 != predictor 48: small_to_mtp_projection
    ("voice_design", dict(hidden_size=48, text_hidden_size=24, predictor_head_dim=16)),  # equal widths: identity
    (
        "base",
        dict(
            hidden_size=32, intermediate_size=80, num_attention_heads=2, num_key_value_heads=1, head_dim=24,
            num_hidden_layers=3, predictor_hidden_size=40, predictor_num_attention_heads=5,
            predictor_num_key_value_heads=5, predictor_head_dim=8, predictor_num_hidden_layers=1,
        ),
    ),
]  # fmt: skip


def parity_inputs(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "text_ids": rng.integers(0, 151936, T).tolist(),
        "codec_ids": rng.integers(0, 3072, T).tolist(),
        "frame": rng.integers(0, 2048, 16).tolist(),
    }


def close(ours: torch.Tensor, ref: np.ndarray, what: str) -> None:
    ours = ours.detach().float().numpy()
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != reference {ref.shape}"
    err = np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-6)
    assert err < RTOL, f"{what}: max relative difference {err:.2e} >= {RTOL}"


@torch.no_grad()
def our_outputs(talker: Qwen3TTSTalker, inputs: dict) -> dict[str, torch.Tensor]:
    """Same quantities as the reference's "forward" task, through our slot caches (slot 1 of 3)."""
    text_ids, codec_ids = torch.tensor([inputs["text_ids"]]), torch.tensor([inputs["codec_ids"]])
    frame = torch.tensor(inputs["frame"])
    slot = torch.tensor([1])
    x = talker.embed_text(text_ids) + talker.embed_codec(codec_ids)
    cache = talker.new_cache(3, 32, torch.float32, "cpu")
    hidden = talker(x, torch.arange(T)[None], cache, slot)

    predictor = talker.code_predictor
    pcache = predictor.new_cache(3, torch.float32, "cpu")
    prefill = torch.cat([hidden[:, -1:], talker.embed_codec(frame[None, :1])], dim=1)
    h = predictor(prefill, torch.arange(2)[None], pcache, slot)
    logits = [predictor.logits(h[:, -1], 1)]
    for q in range(1, 15):  # 14 single steps: position q+1 gets codebook q and predicts codebook q+1
        h = predictor(predictor.codec_embedding[q - 1](frame[None, q : q + 1]), torch.tensor([[q + 1]]), pcache, slot)
        logits.append(predictor.logits(h[:, -1], q + 1))
    return {
        "hidden": hidden[0],
        "codec_logits": talker.codec_logits(hidden)[0],
        "frame_embed": talker.embed_frame(frame),
        "predictor_logits": torch.cat(logits),
    }


@functools.cache
def loaded(model_dir, dtype: torch.dtype = torch.float32):
    """Each checkpoint is loaded once per dtype (loading the BPE tokenizer takes seconds)."""
    return load_qwen3_tts(model_dir, dtype=dtype)


def check_parity(model_dir, ref: dict, prefix: str, inputs: dict) -> None:
    model = loaded(model_dir)
    ours = our_outputs(model.talker, inputs)
    for name, value in ours.items():
        close(value, ref[f"{prefix}/{name}"], f"{model_dir.name} {name}")


# --- checkpoints written by the reference's save_pretrained, several widths --------------------------------------


@pytest.fixture(scope="module")
def reference_written(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref_written")
    write_tokenizer_files(root / "tok")
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 4, 5, 16)).tolist()
    k = rng.standard_normal((2, 2, 5, 16)).tolist()
    tasks: list[dict] = [
        {"action": "rope", "head_dim": 16, "mrope_section": [3, 3, 2], "theta": 1e6, "positions": [0, 3, 4, 5, 1000],
         "q": q, "k": k},
    ]  # fmt: skip
    dirs = []
    for i, (variant, sizes) in enumerate(REF_WIDTHS):
        config = tiny_config(variant, **sizes)
        config = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
        out = root / f"{variant}_{i}"
        dirs.append(out)
        tasks.append(
            {"action": "save", "out_dir": str(out), "config": config, "seed": i, "tokenizer_dir": str(root / "tok"),
             "generation_config": GENERATION_CONFIG}
        )  # fmt: skip
        tasks.append({"action": "forward", "model_dir": str(out), **parity_inputs(i)})
    return dirs, run_reference("ref_talker.py", {"tasks": tasks}), {"q": q, "k": k}


def test_rope_equals_reference_interleaved_mrope(reference_written):
    _, ref, rope_in = reference_written
    positions = torch.tensor([0, 3, 4, 5, 1000])
    cos, sin = rope_cos_sin(positions.expand(2, -1), rope_frequencies(16, 1e6, "cpu"), torch.float32)  # [B, T, 1, D]
    for name in ("q", "k"):
        x = torch.tensor(rope_in[name], dtype=torch.float32).transpose(1, 2)  # reference layout [B, H, T, D]
        close(apply_rope(x, cos, sin).transpose(1, 2), ref[f"0/{name}"], f"rope {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("head_dim, theta", [(128, 1e6), (16, 1e4)])
def test_rope_tables_are_the_textbook_ones_to_the_bit(dtype, head_dim, theta):
    """rope_cos_sin in fewer ops (exponents made in fp32, the frequencies concatenated, positions converted in the
    product, cos and sin stored in `dtype` by their own kernels) against the textbook sequence, bit for bit, at
    positions to ~300,000; positions that would give angles in another dtype than fp32 are refused."""
    positions = torch.arange(0, 300_000, 37)[:8100].view(-1, 10)
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    freqs = positions.float()[..., None] * (1.0 / (theta**exponents))
    emb = torch.cat((freqs, freqs), dim=-1)[:, :, None, :]
    cos, sin = rope_cos_sin(positions, rope_frequencies(head_dim, theta, "cpu"), dtype)
    assert cos.dtype == sin.dtype == dtype and cos.shape == (810, 10, 1, head_dim)
    assert torch.equal(cos, emb.cos().to(dtype)) and torch.equal(sin, emb.sin().to(dtype))
    with pytest.raises(ValueError, match="angles in torch.float64"):
        rope_cos_sin(positions.double(), rope_frequencies(head_dim, theta, "cpu"), dtype)


def test_a_stack_keeps_its_rope_frequencies_and_forwards_as_without():
    """Decoder.rope_frequencies: made once per device and kept (6 ops fewer a forward), the same tensor on every
    later call; a forward with them kept equals one that makes them anew, to the bit; with keep_rope_frequencies off
    (the benchmark's A/B) nothing is kept."""
    torch.manual_seed(0)
    stack = Qwen3TTSTalker(Qwen3TTSConfig.parse(tiny_config("custom_voice")).talker).eval().model
    kept = stack.rope_frequencies(torch.device("cpu"))
    assert stack.rope_frequencies(torch.device("cpu")) is kept
    assert torch.equal(kept, rope_frequencies(stack.cfg.head_dim, stack.cfg.rope_theta, "cpu"))
    x = torch.randn(2, 3, stack.cfg.hidden_size)
    positions = torch.tensor([[0, 1, 2], [5, 6, 7]])
    slots = torch.tensor([1, 0])
    outs = []
    for keep in (True, False):
        stack.keep_rope_frequencies = keep
        stack._rope_frequencies.clear()
        cache = stack.new_cache(2, 16, torch.float32, "cpu")
        with torch.no_grad():
            outs.append(stack(x, positions, cache, slots))
        assert bool(stack._rope_frequencies) == keep
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("index", range(len(REF_WIDTHS)))
def test_parity_on_reference_saved_checkpoint(reference_written, index):
    dirs, ref, _ = reference_written
    check_parity(dirs[index], ref, str(2 + 2 * index), parity_inputs(index))


def test_reference_saved_widths_exercise_projection_and_identity(reference_written):
    dirs, _, _ = reference_written
    projected = loaded(dirs[0]).talker.code_predictor.small_to_mtp_projection
    identity = loaded(dirs[1]).talker.code_predictor.small_to_mtp_projection
    assert isinstance(projected, torch.nn.Linear) and projected.weight.shape == (48, 64)
    assert isinstance(identity, torch.nn.Identity)


# --- slot batching ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def talker(reference_written) -> Qwen3TTSTalker:
    dirs, _, _ = reference_written
    return loaded(dirs[0]).talker


@torch.no_grad()
def test_batched_slots_with_different_lengths_equal_each_slot_alone(talker):
    """Prefill three slots with different prompt lengths, then decode steps batched over all of them."""
    torch.manual_seed(0)
    lengths, slots, steps = [3, 7, 5], [2, 0, 3], 4
    hid = talker.cfg.hidden_size
    prompts = [torch.randn(1, n, hid) for n in lengths]
    step_inputs = torch.randn(steps, len(lengths), 1, hid)

    # Alone: each request in a fresh cache of its own.
    alone = []
    for i, n in enumerate(lengths):
        cache = talker.new_cache(1, 16, torch.float32, "cpu")
        outs = [talker(prompts[i], torch.arange(n)[None], cache, torch.tensor([0]))[:, -1]]
        for s in range(steps):
            outs.append(talker(step_inputs[s, i : i + 1], torch.tensor([[n + s]]), cache, torch.tensor([0]))[:, -1])
        alone.append(torch.cat(outs))

    # Together: one shared cache with stale garbage, one prefill per slot, then batched decode steps.
    cache = talker.new_cache(4, 16, torch.float32, "cpu")
    cache.k.normal_()
    cache.v.normal_()
    first = [
        talker(prompts[i], torch.arange(n)[None], cache, torch.tensor([slots[i]]))[:, -1] for i, n in enumerate(lengths)
    ]
    batched = [torch.cat(first)]
    for s in range(steps):
        positions = torch.tensor([[n + s] for n in lengths])
        batched.append(talker(step_inputs[s], positions, cache, torch.tensor(slots), kv_len=12)[:, -1])
    batched = torch.stack(batched, dim=1)  # [B, steps + 1, H]
    for i in range(len(lengths)):
        torch.testing.assert_close(batched[i], alone[i], rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_batched_prefill_of_padded_prompts_equals_alone(talker):
    """A batched multi-token forward over slots whose positions differ per row matches single-slot runs."""
    torch.manual_seed(1)
    hid = talker.cfg.hidden_size
    x = torch.randn(2, 4, hid)
    positions = torch.tensor([[0, 1, 2, 3], [5, 6, 7, 8]])
    prefix = torch.randn(1, 5, hid)
    cache = talker.new_cache(2, 16, torch.float32, "cpu")
    talker(prefix, torch.arange(5)[None], cache, torch.tensor([1]))
    together = talker(x, positions, cache, torch.tensor([0, 1]))
    solo_cache = talker.new_cache(1, 16, torch.float32, "cpu")
    solo0 = talker(x[:1], positions[:1], solo_cache, torch.tensor([0]))
    solo_cache = talker.new_cache(1, 16, torch.float32, "cpu")
    talker(prefix, torch.arange(5)[None], solo_cache, torch.tensor([0]))
    solo1 = talker(x[1:], positions[1:], solo_cache, torch.tensor([0]))
    torch.testing.assert_close(together, torch.cat([solo0, solo1]), rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_bf16_runs_and_tracks_fp32(reference_written):
    dirs, _, _ = reference_written
    inputs = parity_inputs(0)
    fp32 = our_outputs(loaded(dirs[0]).talker, inputs)
    model = loaded(dirs[0], torch.bfloat16)
    assert model.talker.codec_head.weight.dtype == torch.bfloat16
    talker = model.talker
    x = talker.embed_text(torch.tensor([inputs["text_ids"]])) + talker.embed_codec(torch.tensor([inputs["codec_ids"]]))
    cache = talker.new_cache(1, 16, torch.bfloat16, "cpu")
    hidden = talker(x, torch.arange(T)[None], cache, torch.tensor([0]))
    assert hidden.dtype == torch.bfloat16
    err = (hidden[0].float() - fp32["hidden"]).abs().max() / fp32["hidden"].abs().max()
    assert err < 0.05, f"bf16 hidden deviates {err:.3f} from fp32"


def test_bad_forward_arguments_are_clear_errors(talker):
    hid = talker.cfg.hidden_size
    cache = talker.new_cache(2, 8, torch.float32, "cpu")
    x, pos, slots = torch.zeros(1, 3, hid), torch.arange(3)[None], torch.tensor([0])
    with pytest.raises(ValueError, match="x must be"):
        talker(torch.zeros(1, 3, hid + 1), pos, cache, slots)
    with pytest.raises(ValueError, match="positions must be"):
        talker(x, torch.arange(2)[None], cache, slots)
    with pytest.raises(ValueError, match="slots must be"):
        talker(x, pos, cache, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="kv_len 9"):
        talker(x, pos, cache, slots, kv_len=9)
