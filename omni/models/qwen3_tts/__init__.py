"""Qwen3-TTS-12Hz: talker, code predictor, speaker encoder and the 12 Hz codec."""
