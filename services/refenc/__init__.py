"""Reference-encoder service: reference audio -> codec codes + x-vector, a shared cache, the voice registry."""
