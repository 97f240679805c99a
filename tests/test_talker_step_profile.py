"""The opt-in prefill-step profiler: it profiles exactly the steps asked for and logs what it saw."""

import logging

import torch

from omni.talker.step_profile import StepProfiler


def test_profiles_only_the_named_prefill_steps(caplog):
    profiler = StepProfiler("2")
    x = torch.randn(64, 64)
    with caplog.at_level(logging.INFO, logger="omni.talker.profile"):
        for _ in range(3):
            with profiler.prefill_step(prompts=1, decodes=4):
                (x @ x).sum()
    records = [r for r in caplog.records if r.name == "omni.talker.profile"]
    assert len(records) == 1
    fields = records[0].fields
    assert fields["prefill_step"] == 2 and fields["prompts"] == 1 and fields["decodes"] == 4
    assert any(op[0] == "aten::mm" for op in fields["top_host_ops"])
    assert fields["wall_ms"] > 0


def test_off_by_default(monkeypatch):
    monkeypatch.delenv("OMNI_TALKER_PROFILE_PREFILL_STEPS", raising=False)
    assert StepProfiler().wanted == set()
    assert StepProfiler("3, 5").wanted == {3, 5}
