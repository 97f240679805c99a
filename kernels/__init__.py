"""Triton kernels (mapped to the omni.kernels package)."""
