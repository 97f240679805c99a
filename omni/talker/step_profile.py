"""Opt-in profiles of chosen talker engine steps, logged as one JSON line each (a diagnostic for GPU runs).

`OMNI_TALKER_PROFILE_PREFILL_STEPS="40,41"` profiles the 40th and 41st steps that prefill prompts (counting from
1 after start-up): wall time in the engine thread, GPU kernel time and launches, and the ops that took the most host
time. It answers "is a prefill step host-bound or GPU-bound inside the service" without a profiler attached.
"""

import contextlib
import logging
import os
import time

log = logging.getLogger("omni.talker.profile")
ENV = "OMNI_TALKER_PROFILE_PREFILL_STEPS"


class StepProfiler:
    def __init__(self, steps: str | None = None) -> None:
        text = os.environ.get(ENV, "") if steps is None else steps
        self.wanted = {int(s) for s in text.split(",") if s.strip()}
        self.prefill_steps = 0

    @contextlib.contextmanager
    def prefill_step(self, prompts: int, decodes: int):
        """Wrap one step that has prefills; profiles it when its number was asked for."""
        self.prefill_steps += 1
        if self.prefill_steps not in self.wanted:
            yield
            return
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        start = time.perf_counter()
        with profile(activities=activities) as prof:
            yield
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - start) * 1000.0
        fields = {"prefill_step": self.prefill_steps, "prompts": prompts, "decodes": decodes}
        fields |= {"wall_ms": round(wall_ms, 2), **summarize_profile(prof, top=12)}
        log.info("profiled prefill step", extra={"fields": fields})


def summarize_profile(prof, top: int) -> dict:
    """A finished torch profile in short: GPU kernel time and launches, and the `top` ops by host (self CPU) time as
    [name, calls, ms] (tools/bench_prefill.py reports its prefills the same way)."""
    events = prof.key_averages()
    gpu = [e for e in events if e.device_type.name == "CUDA"]
    host = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "gpu_kernel_ms": round(sum(e.self_device_time_total for e in gpu) / 1e3, 3),
        "kernel_launches": sum(e.count for e in gpu),
        "top_host_ops": [[e.key[:80], e.count, round(e.self_cpu_time_total / 1e3, 3)] for e in host],
    }
