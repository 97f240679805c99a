"""Triton kernels (mapped to the omni.kernels package)."""

import os

# Under the Triton interpreter (CPU tests: TRITON_INTERPRET=1, set before the first kernel import) each program runs
# as numpy calls and libdevice is absent, so kernels pick larger tiles and plain arithmetic there.
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
