"""Greedy generation through our prompt builder + slot runner equals the official `generate` (fp32, eager).

For every variant and text mode, on checkpoints our generator writes and on checkpoints the reference's own
classes write (`save_pretrained`, other widths): the prompt embeddings and trailing text, every raw
codebook-0 logit row (1e-4 relative) and all 40 frames of codes. Our side runs each checkpoint's cases as one
batch of slots, so batching is part of what is proven. One reference process does all the reference work.
"""

import numpy as np
import pytest
import torch

from omni.models.qwen3_tts.tiny import GENERATION_CONFIG, tiny_config, write_tokenizer_files
from omni.talker.generate import SynthesisOptions, Synthesizer, generate_codes
from omni.talker.prompt import SpeechRequest
from tests.reference import run_reference

FRAMES = 40
# The reference spends ~10 s of CPU per 41-draw call; on a busy shared box that can exceed the default limit.
pytestmark = pytest.mark.timeout(1800)
MAX_NEW = FRAMES + 1  # the last drawn codebook-0 id never becomes a frame
RTOL = 1e-4
TEXT = "The quick brown fox jumps over the lazy dog, then it rests under a tree."
SHORT = "Hi there."

# Reference-written checkpoints: (variant, tts_model_size, sizes). 1b7 CustomVoice reads instructions.
REF_WRITTEN = [
    ("custom_voice", "1b7", dict(hidden_size=48, text_hidden_size=24, predictor_head_dim=16)),  # equal widths
    ("voice_design", "1b7", dict(hidden_size=40, num_attention_heads=2, num_key_value_heads=1, head_dim=20)),
    ("base", "0b6", dict(hidden_size=32, num_hidden_layers=3, predictor_hidden_size=40, predictor_head_dim=8)),
]


def cases(source: str, variant: str, hidden: int, seed: int) -> dict[str, dict]:
    """name -> request fields (our SpeechRequest names, non_streaming_mode explicit) for one checkpoint.

    Each source covers every variant and mode: CustomVoice with and without dialect override (auto and
    chinese), VoiceDesign, Base ICL streaming (queued and padded text) and non-streaming, Base x-vector only;
    plus instructions on a 1.7B CustomVoice and both text modes outside ICL (VoiceDesign, x-vector only).
    Cases of one checkpoint and text mode run as one official batch, so the reference makes 8 calls.
    """
    rng = np.random.default_rng(seed)
    x_vector = rng.standard_normal(hidden).astype(np.float32)
    ref_codes = {n: rng.integers(0, 2048, (n, 16)) for n in (6, 30)}
    icl = dict(ref_text="A short reference.", ref_codes=ref_codes[6], x_vector=x_vector)
    table = {
        ("ours", "custom_voice"): {
            "plain": dict(text=TEXT, speaker="Vivian", language="English", non_streaming_mode=True),
            "dialect_auto": dict(text=TEXT, speaker="Dylan", non_streaming_mode=True),
        },
        ("ours", "voice_design"): {
            "instructions": dict(
                text=TEXT, instructions="A calm, deep voice.", language="English", non_streaming_mode=True
            )
        },
        ("ours", "base"): {
            "icl_streaming": dict(text=TEXT, **icl, non_streaming_mode=False),
            "x_vector_only": dict(text=TEXT, x_vector=x_vector, x_vector_only=True, non_streaming_mode=False),
            "icl_non_streaming": dict(text=SHORT, **icl, non_streaming_mode=True),
        },
        ("ref", "custom_voice"): {
            "instructions": dict(text=SHORT, speaker="Ryan", instructions="Speak slowly.", non_streaming_mode=True),
            "dialect_chinese": dict(
                text="今天天气很好，我们去公园散步吧。", speaker="Eric", language="Chinese", non_streaming_mode=True
            ),
        },
        ("ref", "voice_design"): {"streaming_no_instructions": dict(text=SHORT, non_streaming_mode=False)},
        ("ref", "base"): {
            "icl_streaming_padded": dict(
                text=SHORT, ref_text="Ref.", ref_codes=ref_codes[30], x_vector=x_vector, non_streaming_mode=False
            ),
            "icl_non_streaming": dict(text=TEXT, **icl, non_streaming_mode=True, language="English"),
            "x_vector_only_non_streaming": dict(
                text=TEXT, x_vector=x_vector, x_vector_only=True, non_streaming_mode=True
            ),
        },
    }
    return table[(source, variant)]


def reference_item(fields: dict) -> dict:
    item = {}
    names = dict(text="text", speaker="speaker", language="language", instructions="instruct", ref_text="ref_text")
    for ours, theirs in names.items():
        if fields.get(ours) is not None:
            item[theirs] = fields[ours]
    if "x_vector" in fields:
        item["x_vector"] = fields["x_vector"].tolist()
        item["x_vector_only"] = fields.get("x_vector_only", False)
        if not item["x_vector_only"]:
            item["ref_codes"] = fields["ref_codes"].tolist()
    return item


def speech_request(fields: dict) -> SpeechRequest:
    f = dict(fields)
    if "x_vector" in f:
        f["x_vector"] = torch.from_numpy(f["x_vector"])
    if "ref_codes" in f:
        f["ref_codes"] = torch.from_numpy(f["ref_codes"])
    return SpeechRequest(**f)


@pytest.fixture(scope="module")
def parity(tiny_model_dir, tmp_path_factory):
    """[(checkpoint label, model_dir, variant, case name, fields, reference outputs)] for every case."""
    root = tmp_path_factory.mktemp("gen_parity")
    write_tokenizer_files(root / "tok")
    checkpoints = []  # (label, dir, variant, hidden)
    for variant in ("custom_voice", "voice_design", "base"):
        hidden = tiny_config(variant)["talker_config"]["hidden_size"]
        checkpoints.append(("ours", tiny_model_dir(variant), variant, hidden))
    tasks: list[dict] = []
    for i, (variant, size, sizes) in enumerate(REF_WRITTEN):
        config = tiny_config(variant, **sizes)
        config = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
        config["tts_model_size"] = size
        out = root / f"ref_{variant}"
        tasks.append(
            {"action": "save", "out_dir": str(out), "config": config, "seed": 100 + i,
             "tokenizer_dir": str(root / "tok"), "generation_config": GENERATION_CONFIG}
        )  # fmt: skip
        checkpoints.append(("ref", out, variant, config["talker_config"]["hidden_size"]))
    runs = []
    for k, (source, model_dir, variant, hidden) in enumerate(checkpoints):
        label = f"{source}-{variant}"
        by_mode: dict[bool, list] = {}
        for name, fields in cases(source, variant, hidden, seed=k).items():
            by_mode.setdefault(fields["non_streaming_mode"], []).append((name, fields))
        # The official generate takes one text mode per call: one batched call per (checkpoint, mode).
        for mode, group in by_mode.items():
            for j, (name, fields) in enumerate(group):
                runs.append((label, model_dir, variant, name, fields, f"{len(tasks)}/{j}"))
            tasks.append(
                {"model_dir": str(model_dir), "variant": variant, "max_new_tokens": MAX_NEW, "greedy": True,
                 "non_streaming_mode": mode, "items": [reference_item(f) for _, f in group]}
            )  # fmt: skip
    ref = run_reference("ref_generate.py", {"tasks": tasks})
    return [(lab, d, v, name, f, {n: ref[f"{key}/{n}"] for n in REF_OUTPUTS}) for lab, d, v, name, f, key in runs]


REF_OUTPUTS = ("codes", "logits", "prompt_embeds", "trailing")


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-6))


@pytest.fixture(scope="module", params=[False, True], ids=["projection", "projected_lookups"])
def ours(parity, request):
    """Our outputs per (label, case): each checkpoint's cases run together, one slot each. Twice: with the code
    predictor's projection run on each looked-up embedding, and with its inputs looked up in projected tables
    (TalkerRunner's projected_lookups) where the checkpoint has a projection."""
    results = {}
    projected = 0
    for label in dict.fromkeys(run[0] for run in parity):
        runs = [r for r in parity if r[0] == label]
        synth = Synthesizer(runs[0][1])
        prompts = [synth.builder.build(speech_request(r[4])) for r in runs]
        params = [synth.sampling_params(SynthesisOptions(greedy=True, max_new_tokens=MAX_NEW)) for _ in runs]
        runner = synth.runner_for(len(runs), max(len(p) for p in prompts) + MAX_NEW)
        if request.param:
            runner.projected = runner.talker.code_predictor.projected_embeddings()
            projected += runner.projected is not None
        logits: list[torch.Tensor] = []
        hook = runner.talker.codec_head.register_forward_hook(
            lambda _m, _i, out, rows=logits: rows.append(out.detach().clone())
        )
        try:
            codes = generate_codes(runner, prompts, params)
        finally:
            hook.remove()
        # Rows: one prefill row per slot in slot order, then one [B, V] block per step (all slots stay active).
        steps = torch.stack([torch.cat(logits[: len(runs)])] + logits[len(runs) :], dim=1)
        for k, r in enumerate(runs):
            prompt = prompts[k]
            # The reference pads every queue of its batch with tts_pad to the longest; ours continues with tts_pad.
            ref_len = next(p for p in parity if p[0] == label and p[3] == r[3])[5]["trailing"].shape[0]
            pad = torch.full((max(ref_len - prompt.trailing_ids.numel(), 0),), synth.model.config.tts_pad_token_id)
            trailing_ids = torch.cat([prompt.trailing_ids, pad])
            results[(label, r[3])] = {
                "codes": codes[k],
                "logits": steps[k].numpy(),
                "prompt_embeds": runner.embed_prompt(prompt).numpy(),
                "trailing": synth.model.talker.embed_text(trailing_ids).detach().numpy(),
            }
    assert projected == 5 * request.param  # all but the reference-written CustomVoice (equal widths)
    return results


def mode(variant: str, fields: dict) -> str:
    if variant == "custom_voice":
        return "custom_voice dialect" if fields["speaker"] in ("Dylan", "Eric") else "custom_voice"
    if variant == "voice_design":
        return "voice_design"
    if fields.get("x_vector_only"):
        return "base x_vector_only"
    return "base icl " + ("non_streaming" if fields["non_streaming_mode"] else "streaming")


def test_every_variant_and_mode_is_covered_on_both_sources(parity):
    required = {"custom_voice", "custom_voice dialect", "voice_design", "base icl streaming",
                "base icl non_streaming", "base x_vector_only"}  # fmt: skip
    for source in ("ours", "ref"):
        covered = {mode(v, f) for label, _, v, _, f, _ in parity if label.startswith(source)}
        assert covered == required, f"{source}: missing {required - covered}"
    assert any(f.get("instructions") and v == "custom_voice" for _, _, v, _, f, _ in parity)


def test_greedy_codes_equal_reference(parity, ours):
    for label, _, _, name, _, ref in parity:
        got = ours[(label, name)]["codes"]
        assert ref["codes"].shape == (FRAMES, 16), f"{label} {name}: reference gave {ref['codes'].shape}"
        assert got.shape == (FRAMES, 16), f"{label} {name}: we gave {got.shape}"
        mismatch = np.argwhere(got != ref["codes"])
        assert mismatch.size == 0, f"{label} {name}: first differing (frame, codebook) {mismatch[0].tolist()}"


def test_talker_logits_equal_reference(parity, ours):
    for label, _, _, name, _, ref in parity:
        got = ours[(label, name)]["logits"]
        assert got.shape == ref["logits"].shape == (MAX_NEW, ref["logits"].shape[1])
        err = relative_error(got, ref["logits"])
        assert err < RTOL, f"{label} {name}: codec logits differ by {err:.2e} (relative)"


def test_prompt_and_trailing_text_equal_reference(parity, ours):
    for label, _, _, name, _, ref in parity:
        got = ours[(label, name)]
        assert got["prompt_embeds"].shape == ref["prompt_embeds"].shape, f"{label} {name}: prompt length"
        assert relative_error(got["prompt_embeds"], ref["prompt_embeds"]) < 1e-5, f"{label} {name}: prompt"
        assert got["trailing"].shape == ref["trailing"].shape, f"{label} {name}: trailing queue length"
        assert relative_error(got["trailing"], ref["trailing"]) < 1e-5, f"{label} {name}: trailing text"
