"""Model code: our own PyTorch implementations that load the official checkpoints unchanged."""
