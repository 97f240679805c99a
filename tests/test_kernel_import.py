"""omni.kernels reads TRITON_INTERPRET once, when first imported (`INTERPRETED`). The kernel tests set it at their
module's top, before their first kernel import; if an earlier test module of the same pytest worker had already
imported omni.kernels through a runner or a service, the kernels would run as on a GPU there (session 45: 95 tests
failed so). So nothing a CPU test imports at module level may import it."""

import os
import subprocess
import sys

MODULES = [
    "omni.talker.model_runner",
    "omni.talker.engine",
    "omni.talker.cuda_graphs",
    "omni.talker.generate",
    "omni.services.talker.service",
    "omni.services.codec.service",
    "omni.services.gateway.app",
    "omni.models.qwen3_tts.talker",
    "omni.models.qwen3_tts.codec",
]


def test_the_runners_and_services_import_without_the_kernels():
    loaded = "sorted(m for m in sys.modules if m.startswith('omni.kernels'))"
    code = f"import sys\nfor m in {MODULES!r}: __import__(m)\nprint({loaded})"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout
