"""A small offline driver over the TalkerRunner: prompts in, codes out (used by `omni synth` and tests).

It admits every request into its own slot, then steps all unfinished slots together until each one hits
EOS or its max_new_tokens. One [B, 17] tensor (codes + finished flag) comes back to the host per step.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from omni.models.qwen3_tts.loader import Qwen3TTSModel, load_qwen3_tts
from omni.talker.model_runner import TalkerRunner
from omni.talker.prompt import PromptBuilder, PromptError, SpeechRequest, TalkerPrompt
from omni.talker.sampling import SamplingParams


def generate_codes(runner: TalkerRunner, prompts: list[TalkerPrompt], params: list[SamplingParams]) -> list[np.ndarray]:
    """Codes [frames, 16] (int64) per prompt, trimmed at EOS as the official generate does."""
    if len(prompts) != len(params):
        raise ValueError(f"{len(prompts)} prompts but {len(params)} sampling params")
    if len(prompts) > runner.num_slots:
        raise ValueError(f"{len(prompts)} requests but the runner has {runner.num_slots} slots")
    for slot, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
        runner.prefill(slot, prompt, p)
    frames: list[list[np.ndarray]] = [[] for _ in prompts]
    active = list(range(len(prompts)))
    while active:
        codes, finished = runner.decode_step(torch.tensor(active, device=runner.device))
        host = torch.cat([codes, finished[:, None].to(codes.dtype)], dim=1).cpu().numpy()
        still = []
        for row, slot in zip(host, active, strict=True):
            frames[slot].append(row[:-1])
            if not row[-1]:
                still.append(slot)
        active = still
    return [np.stack(f).astype(np.int64) if f else np.zeros((0, runner.groups), np.int64) for f in frames]


@dataclass
class SynthesisOptions:
    """Sampling choices of one synthesis; None takes generation_config.json (then the official defaults)."""

    greedy: bool = False
    seed: int = 0
    max_new_tokens: int | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None


class Synthesizer:
    """Loads a checkpoint once; turns requests into codes through the prompt builder and the runner."""

    def __init__(
        self,
        model_dir: str | Path,
        dtype: torch.dtype | None = torch.float32,
        device: str = "cpu",
    ):
        self.model: Qwen3TTSModel = load_qwen3_tts(model_dir, dtype=dtype, device=device)
        self.builder = PromptBuilder(self.model.config, self.model.tokenizer.encode)
        self.device = device
        self.runner: TalkerRunner | None = None
        self.encoder = None  # codec encoder and decoder, loaded when first needed
        self.decoder = None

    def runner_for(self, num_slots: int, max_len: int) -> TalkerRunner:
        """A runner with at least this many slots and positions (the K/V cache is sized to the work)."""
        r = self.runner
        if r is None or r.num_slots < num_slots or r.max_len < max_len:
            r = TalkerRunner(self.model.talker, self.model.config, num_slots, max_len, self.device)
            self.runner = r
        return r

    def reference_voice(self, wav24k: np.ndarray, with_codes: bool = True) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Base voice cloning inputs from 24 kHz mono reference audio: codes [T, 16] (codec encoder, unless
        x-vector only) and the x-vector [hidden] (speaker encoder), as the official create_voice_clone_prompt."""
        from omni.models.qwen3_tts.codec_encoder import CodecEncoder
        from omni.models.qwen3_tts.speaker_encoder import extract_xvector

        if self.model.speaker_encoder is None:
            raise PromptError(
                f"reference audio is only for Base models; this model is {self.model.config.tts_model_type}"
            )
        x_vector = extract_xvector(self.model.speaker_encoder, wav24k).float().cpu()
        codes = None
        if with_codes:
            if self.encoder is None:
                self.encoder = CodecEncoder.from_pretrained(self.model.model_dir, device=self.device)
            codes = self.encoder.encode(wav24k).cpu()
        return codes, x_vector

    def decode(self, codes: np.ndarray, ref_codes: torch.Tensor | None = None) -> np.ndarray:
        """Whole-utterance waveform (float32, 24 kHz) of codes [T, 16]. With ICL reference codes, the official
        wrapper decodes reference + generated codes together and cuts the reference's share; so do we."""
        from omni.models.qwen3_tts.codec import load_codec_decoder

        if self.decoder is None:
            self.decoder = load_codec_decoder(self.model.model_dir, device=self.device)
        generated = torch.as_tensor(codes, dtype=torch.int64)
        if generated.shape[0] == 0:
            return np.zeros(0, np.float32)
        prefix = 0 if ref_codes is None else int(ref_codes.shape[0])
        full = generated if ref_codes is None else torch.cat([ref_codes.to(torch.int64), generated])
        with torch.no_grad():
            wav = self.decoder.decode(full[None].to(self.device))[0]
        return wav[prefix * self.decoder.samples_per_frame :].float().cpu().numpy()

    def sampling_params(self, options: SynthesisOptions) -> SamplingParams:
        overrides = dict(
            seed=options.seed,
            max_new_tokens=options.max_new_tokens,
            temperature=options.temperature,
            top_k=options.top_k,
            top_p=options.top_p,
            repetition_penalty=options.repetition_penalty,
        )
        if options.greedy:
            overrides.update(do_sample=False, subtalker_dosample=False)
        return SamplingParams.from_generation_config(self.model.generation, **overrides)

    def synthesize(self, requests: list[SpeechRequest], options: list[SynthesisOptions]) -> list[np.ndarray]:
        prompts = [self.builder.build(r) for r in requests]
        params = [self.sampling_params(o) for o in options]
        max_len = max(len(pr) + p.max_new_tokens for pr, p in zip(prompts, params, strict=True))
        return generate_codes(self.runner_for(len(prompts), max_len), prompts, params)
