"""Alert rules (charts/omni/files/alerts.yml, linked as deploy/prometheus/alerts.yml) and Grafana dashboards.

promtool checks and unit-tests the rules; every PromQL expression in the rules, the dashboards and the chart's
autoscaling values parses (promtool) and names only series the services define (read from their code).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "omni"
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "tests" / "alerts_test.yml"
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
PROMTOOL = shutil.which("promtool")


def promtool(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    if PROMTOOL is None:
        raise RuntimeError("promtool not found; install it with `apt-get install -y prometheus`")
    return subprocess.run([PROMTOOL, *map(str, args)], capture_output=True, text=True, cwd=cwd)


# --- the series the services define -----------------------------------------------------------------------------------

# `MetricsServer("omni_codec")` gives a service package its namespace; `.counter("frames", ...)` etc. add to it.
NAMESPACE = re.compile(r'MetricsServer\(\s*"(omni_\w+)"')
HELPER = re.compile(r'\.(counter|gauge|histogram)\(\s*"(\w+)"')
GC_PAUSES = re.compile(r"\.gc_pauses\(\)")  # MetricsServer.gc_pauses(): the namespace's gc_pause_ms histogram
LOOP_LAG = re.compile(r"\.loop_lag\(\)")  # MetricsServer.loop_lag(): the namespace's loop_lag_ms histogram
DIRECT = re.compile(r'\b(Counter|Gauge|Histogram)\(\s*"(omni_\w+)"')


def series_names(kind: str, name: str) -> set[str]:
    """Names prometheus_client exposes for a metric (counters get _total, histograms _bucket/_sum/_count)."""
    if kind == "counter":
        base = name.removesuffix("_total")
        return {f"{base}_total", f"{base}_created"}
    if kind == "histogram":
        return {f"{name}_bucket", f"{name}_sum", f"{name}_count", f"{name}_created"}
    return {name}


def defined_series() -> set[str]:
    names: set[str] = set()
    for package in sorted(p for p in (ROOT / "services").iterdir() if p.is_dir()):
        sources = [f.read_text() for f in sorted(package.rglob("*.py"))]
        namespaces = {ns for src in sources for ns in NAMESPACE.findall(src)}
        assert len(namespaces) <= 1, f"{package.name}: several metric namespaces {namespaces}"
        for src in sources:
            for kind, name in DIRECT.findall(src):
                names |= series_names(kind.lower(), name)
            for kind, name in HELPER.findall(src):
                if namespaces:
                    names |= series_names(kind, f"{next(iter(namespaces))}_{name}")
            if namespaces and GC_PAUSES.search(src):
                names |= series_names("histogram", f"{next(iter(namespaces))}_gc_pause_ms")
            if namespaces and LOOP_LAG.search(src):
                names |= series_names("histogram", f"{next(iter(namespaces))}_loop_lag_ms")
    return names


def used_metrics(expr: str) -> set[str]:
    return set(re.findall(r"\bomni_\w+", expr))


def test_defined_series_match_the_live_registries() -> None:
    """The code scan agrees with what prometheus_client actually exposes for the codec, talker and gateway."""
    from omni.services.codec.metrics import CodecMetrics
    from omni.services.gateway.metrics import GatewayMetrics
    from omni.services.talker.metrics import TalkerMetrics
    from prometheus_client import CollectorRegistry

    def exposed(registry: CollectorRegistry) -> set[str]:
        out = set()
        for family in registry.collect():
            kind = family.type
            out |= series_names(kind if kind in ("counter", "histogram") else "gauge", family.name)
        return out

    scanned = defined_series()
    for registry in (CodecMetrics().server.registry, TalkerMetrics().server.registry, GatewayMetrics().registry):
        live = exposed(registry)
        assert live and live <= scanned, live - scanned
    assert {"omni_refenc_cache_redis_up", "omni_refenc_cache_lookups_total"} <= scanned


# --- alert rules ---------------------------------------------------------------------------------------------------


def test_rules_file_is_the_charts_file() -> None:
    assert RULES.resolve() == (CHART / "files" / "alerts.yml").resolve()


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0 and "SUCCESS: 7 rules found" in result.stdout, result.stdout + result.stderr


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", RULE_TESTS)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_promtool_unit_tests_catch_a_broken_rule(tmp_path: Path) -> None:
    """The unit tests bite: a TTFA threshold raised tenfold makes them fail."""
    rules = RULES.read_text()
    assert rules.count("> 0.5\n") == 1
    (tmp_path / "alerts.yml").write_text(rules.replace("> 0.5\n", "> 5\n"))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "alerts_test.yml").write_text(RULE_TESTS.read_text())
    result = promtool("test", "rules", tmp_path / "tests" / "alerts_test.yml")
    assert result.returncode != 0 and "OmniHighTimeToFirstAudio" in result.stdout + result.stderr


def test_alerts_cover_the_required_signals_and_use_defined_series() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = {r["alert"]: r for g in groups for r in g["rules"]}
    assert {
        "OmniHighTimeToFirstAudio",
        "OmniPlaybackUnderrun",
        "OmniErrorRatioHigh",
        "OmniCodecSaturated",
        "OmniRequestsRejected",
        "OmniRedisDown",
    } <= set(rules)
    defined = defined_series()
    for name, rule in rules.items():
        used = used_metrics(rule["expr"])
        assert used and used <= defined, f"{name}: {used - defined}"
        assert rule["labels"]["severity"] in ("warning", "critical") and rule["annotations"]["summary"]
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert tested == set(rules), set(rules) - tested


# --- dashboards ------------------------------------------------------------------------------------------------------


def dashboard_exprs(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_dashboards_cover_overview_talker_codec_cache() -> None:
    assert [d.stem for d in DASHBOARDS] == ["cache", "codec", "overview", "talker"]
    uids = set()
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        uids.add(dashboard["uid"])
        ids = [p["id"] for p in dashboard["panels"]]
        assert len(ids) == len(set(ids)) >= 6, path.name
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
        for panel in dashboard["panels"]:
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]
    assert len(uids) == len(DASHBOARDS)
    titles = " ".join(p["title"] for p in json.loads((CHART / "dashboards" / "overview.json").read_text())["panels"])
    for needed in ("requests", "Time to first audio", "Real-time factor", "Audio seconds", "Error"):
        assert needed.lower() in titles.lower(), needed


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_queries_parse_and_name_defined_series(path: Path, tmp_path: Path) -> None:
    exprs = dashboard_exprs(json.loads(path.read_text()))
    defined = defined_series()
    for expr in exprs:
        used = used_metrics(expr)
        assert used and used <= defined, f"{path.name}: {expr} uses undefined {used - defined}"
    # promtool parses them as recording rules, with Grafana's variables replaced by what they expand to
    concrete = [e.replace("$__rate_interval", "1m").replace('=~"$namespace"', '=~".*"') for e in exprs]
    rules = {
        "groups": [{"name": "dash", "rules": [{"record": f"dash:expr{i}", "expr": e} for i, e in enumerate(concrete)]}]
    }
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    result = promtool("check", "rules", tmp_path / "rules.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_autoscaling_metrics_are_defined_gauges() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    defined = defined_series()
    for component in ("gateway", "talker", "codec", "refenc"):
        metric = values[component]["autoscaling"]["metric"]
        assert metric in defined and not metric.endswith(("_total", "_bucket")), (component, metric)
