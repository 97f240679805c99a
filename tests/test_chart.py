"""The Helm chart charts/omni, rendered offline with the Helm v4 SDK (helm-python-sdk) and checked against the code.

Every rendered object passes kubernetes-validate --strict for the newest bundled Kubernetes version; the tests then
read the objects: GPUs and node selectors land on the right pods, probes and ports are the ones the services
listen on, headless Services select the right pods, NetworkPolicies allow exactly the needed flows. The last test
starts the real services with the command, args and env the chart renders and probes them as the kubelet would.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from omni.commands.serve import free_port
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "omni"
VALUES_FILES = ["values.yaml", "values-h200.yaml", "values-disaggregated.yaml"]
BACKENDS = ("talker", "codec", "refenc")
COMPONENTS = ("gateway", *BACKENDS)
# Custom resources: no schema in kubernetes-validate; their fields are asserted below instead.
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject", "HTTPRoute"}
K8S_VERSION = kubernetes_validate.latest_version()


def deep_merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def render(values_file: str | None = None, **overrides) -> list[dict]:
    """The rendered objects of release `omni` in namespace `tts` (values file, then overrides on top)."""
    values: dict = {}
    if values_file and values_file != "values.yaml":
        values = yaml.safe_load((CHART / values_file).read_text())
    values = deep_merge(values, overrides)
    with helm.Chart.load(str(CHART)) as chart:
        out = chart.render(values, name="omni", namespace="tts", is_install=True)
    return [
        doc for path, text in sorted(out.items()) if path.endswith(".yaml") for doc in yaml.safe_load_all(text) if doc
    ]


def find(objs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: list[dict], kind: str, name: str) -> dict:
    (obj,) = find(objs, kind, name)
    return obj


def container(objs: list[dict], component: str) -> dict:
    pod = one(objs, "Deployment", f"omni-{component}")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    return c


def pod_spec(objs: list[dict], component: str) -> dict:
    return one(objs, "Deployment", f"omni-{component}")["spec"]["template"]["spec"]


def arg(c: dict, flag: str) -> str:
    values = [a.split("=", 1)[1] for a in c["args"] if a.startswith(flag + "=")]
    assert len(values) == 1, f"{flag} in {c['args']}"
    return values[0]


def env(c: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def port(c: dict, name: str) -> int:
    return {p["name"]: p["containerPort"] for p in c["ports"]}[name]


@pytest.fixture(scope="module")
def default() -> list[dict]:
    return render()


# --- lint, render, schema ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_lint_strict_and_schema_valid(values_file: str) -> None:
    """`helm lint --strict` passes and every rendered object is schema-valid (strict: no unknown fields)."""
    result = helm.lint(str(CHART), yaml.safe_load((CHART / values_file).read_text()), strict=True)
    problems = [m for m in result["messages"] if m["severity"] >= 2]
    assert not result["errors"] and not problems, result
    everything_on = {
        "monitoring": {"forceCRDs": True},
        "apiKeys": {"keys": ["k1"]},
        "ingress": {"enabled": True},
        "httpRoute": {"enabled": True, "parentRefs": [{"name": "public"}]},
        **{c: {"autoscaling": {"enabled": True}} for c in COMPONENTS},
    }
    objs = render(values_file, **everything_on)
    assert len(objs) > 15
    for obj in objs:
        if obj["kind"] in CRD_KINDS:
            continue
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_schema_validation_catches_a_bad_field() -> None:
    """The validator bites: a typo'd field in a rendered object is rejected."""
    deployment = one(render(), "Deployment", "omni-talker")
    deployment["spec"]["template"]["spec"]["nodeSelektor"] = {"a": "b"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def test_tools_helm_shim_lints_and_renders(tmp_path: Path) -> None:
    helm_cli = ROOT / "tools" / "helm"
    lint = subprocess.run([helm_cli, "lint", CHART, "--strict"], capture_output=True, text=True)
    assert lint.returncode == 0 and "0 chart(s) failed" in lint.stdout, lint.stdout + lint.stderr
    values = tmp_path / "v.yaml"
    values.write_text("talker:\n  replicas: 3\n")
    cmd = [helm_cli, "template", "omni", CHART, "-n", "tts", "-f", values, "--set", "codec.replicas=5"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    objs = [d for d in yaml.safe_load_all(out) if d]
    assert one(objs, "Deployment", "omni-talker")["spec"]["replicas"] == 3
    assert one(objs, "Deployment", "omni-codec")["spec"]["replicas"] == 5
    bad = subprocess.run([helm_cli, "template", tmp_path / "missing"], capture_output=True, text=True)
    assert bad.returncode == 1 and "Error:" in bad.stderr


def test_bad_values_fail_with_a_clear_error() -> None:
    with pytest.raises(helm.HelmError, match="antiAffinity must be soft, hard or none"):
        render(talker={"antiAffinity": "sometimes"})
    with pytest.raises(helm.HelmError, match="redis.externalUrl is required"):
        render(redis={"enabled": False})
    with pytest.raises(helm.HelmError, match="autoscaling.kind must be hpa or keda"):
        render(autoscaling={"kind": "cron"}, codec={"autoscaling": {"enabled": True}})


# --- placement: GPUs, node selectors ---------------------------------------------------------------------------------


def gpus(c: dict) -> tuple[int | None, int | None]:
    res = c.get("resources", {})
    return res.get("limits", {}).get("nvidia.com/gpu"), res.get("requests", {}).get("nvidia.com/gpu")


def test_gpus_and_node_selectors_default(default: list[dict]) -> None:
    for component in ("talker", "codec"):
        assert gpus(container(default, component)) == (1, 1)
        spec = pod_spec(default, component)
        assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    for component in ("gateway", "refenc"):
        assert gpus(container(default, component)) == (None, None)
        assert "nodeSelector" not in pod_spec(default, component)
        assert "tolerations" not in pod_spec(default, component)
    assert env(container(default, "refenc"))["OMNI_REFENC_DEVICE"] == "cpu"


def test_h200_values_put_talker_and_codec_on_one_h200_node() -> None:
    objs = render("values-h200.yaml")
    for component in ("talker", "codec"):
        assert gpus(container(objs, component)) == (1, 1)
        assert pod_spec(objs, component)["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200"
    affinity = pod_spec(objs, "codec")["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity[0]["topologyKey"] == "kubernetes.io/hostname"
    assert affinity[0]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "talker"
    assert gpus(container(objs, "refenc")) == (None, None) and gpus(container(objs, "gateway")) == (None, None)


def test_disaggregated_values_use_separate_gpu_pools() -> None:
    objs = render("values-disaggregated.yaml")
    pools = {c: pod_spec(objs, c)["nodeSelector"]["omni.dev/node-pool"] for c in COMPONENTS}
    assert pools == {"gateway": "cpu", "talker": "talker-h200", "codec": "codec-gpu", "refenc": "codec-gpu"}
    for component in BACKENDS:
        assert gpus(container(objs, component)) == (1, 1)
        taints = {t.get("value") for t in pod_spec(objs, component)["tolerations"] if t["key"] == "omni.dev/node-pool"}
        assert taints == {pools[component]}
    assert gpus(container(objs, "gateway")) == (None, None)
    # hard anti-affinity spreads talker replicas over nodes
    anti = pod_spec(objs, "talker")["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "talker"
    # the model is copied from NFS into a node-local emptyDir by an init container
    spec = pod_spec(objs, "talker")
    (init,) = spec["initContainers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "nfs" in volumes["model-source"] and "emptyDir" in volumes["model"]
    assert "/model-source/Qwen3-TTS-12Hz-1.7B-CustomVoice" in init["command"][-1]
    assert arg(container(objs, "talker"), "--model") == "/models/Qwen3-TTS-12Hz-1.7B-CustomVoice"


# --- ports, probes, services ------------------------------------------------------------------------------------------


def omni_parser():
    from omni.cli import build_parser

    return build_parser()


@pytest.mark.parametrize("component", BACKENDS)
def test_backend_ports_probes_and_args(default: list[dict], component: str) -> None:
    c = container(default, component)
    grpc_port, metrics_port = port(c, "grpc"), port(c, "metrics")
    assert c["args"][0] == component
    assert int(arg(c, "--port")) == grpc_port and int(arg(c, "--metrics-port")) == metrics_port
    # kubelet gRPC probes use grpc.health.v1 with service "" (set SERVING after warm-up by GrpcService)
    assert c["startupProbe"]["grpc"] == {"port": grpc_port} and c["readinessProbe"]["grpc"] == {"port": grpc_port}
    assert c["livenessProbe"]["tcpSocket"] == {"port": "grpc"}
    # long enough for weight loading and CUDA-graph capture
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= (600 if component == "talker" else 300)
    annotations = one(default, "Deployment", f"omni-{component}")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(metrics_port)
    # the same ports as the deploy profiles, so `omni <component> --profile ...` alone agrees with the chart
    base = yaml.safe_load((ROOT / "deploy" / "base.yaml").read_text())[component]
    assert (base["port"], base["metrics_port"]) == (grpc_port, metrics_port)
    assert env(c)[f"OMNI_{component.upper()}_PROFILE"] == "qwen3-tts-1.7b-h200"
    assert (ROOT / "deploy" / "qwen3-tts-1.7b-h200.yaml").is_file()


@pytest.mark.parametrize("component", COMPONENTS)
def test_rendered_args_parse_with_the_omni_cli(default: list[dict], component: str) -> None:
    c = container(default, component)
    args = omni_parser().parse_args(c["args"])
    assert args.command == component and args.host == "0.0.0.0"
    assert args.model == "/models/Qwen3-TTS-12Hz-1.7B-CustomVoice"
    if component == "gateway":
        assert int(args.port) == port(c, "http") and int(args.grpc_port) == port(c, "grpc")
    else:
        assert int(args.port) == port(c, "grpc") and int(args.metrics_port) == port(c, "metrics")


def test_gateway_probes_hit_real_routes(default: list[dict]) -> None:
    from omni.services.gateway.app import create_app
    from omni.services.gateway.config import GatewayConfig, GatewaySettings

    from tests.gateway_fakes import ToneBackend

    routes = {r.path for r in create_app(ToneBackend(), GatewayConfig()).routes}
    c = container(default, "gateway")
    http = port(c, "http")
    assert http == GatewaySettings().port and int(arg(c, "--port")) == http
    for probe, path in (("startupProbe", "/live"), ("readinessProbe", "/ready"), ("livenessProbe", "/live")):
        assert c[probe]["httpGet"] == {"path": path, "port": "http"} and path in routes
    annotations = one(default, "Deployment", "omni-gateway")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(http) and annotations["prometheus.io/path"] in routes
    # the gateway reaches every backend through its headless Service (one address per ready pod)
    for backend in BACKENDS:
        target = arg(c, f"--{backend}s")
        assert target == f"omni-{backend}.tts.svc.cluster.local:{port(container(default, backend), 'grpc')}"
    service_ports = {p["name"]: p for p in one(default, "Service", "omni-gateway")["spec"]["ports"]}
    assert service_ports["grpc"]["port"] == int(arg(c, "--grpc-port")) and service_ports["grpc"]["targetPort"] == "grpc"
    no_grpc = container(render(gateway={"grpcPort": -1}), "gateway")
    assert not any(a.startswith("--grpc-port") for a in no_grpc["args"]) and "grpc" not in {
        p["name"] for p in no_grpc["ports"]
    }


def pod_labels(objs: list[dict]) -> dict[str, dict]:
    out = {}
    for kind in ("Deployment", "StatefulSet"):
        for o in find(objs, kind):
            out[o["metadata"]["name"]] = (o["spec"]["template"]["metadata"]["labels"], o["spec"]["template"]["spec"])
    return out


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_services_select_exactly_their_pods(default: list[dict]) -> None:
    pods = pod_labels(default)
    gateway = one(default, "Service", "omni-gateway")
    assert gateway["spec"]["type"] == "ClusterIP" and "clusterIP" not in gateway["spec"]
    for name in ("omni-gateway", "omni-talker", "omni-codec", "omni-refenc", "omni-redis"):
        svc = one(default, "Service", name)
        if name != "omni-gateway":
            assert svc["spec"]["clusterIP"] == "None", f"{name} must be headless"
        matched = [pod for pod, (labels, _) in pods.items() if selects(svc["spec"]["selector"], labels)]
        assert matched == [name]
        (_, spec) = pods[name]
        container_ports = {p["name"] for c in spec["containers"] for p in c["ports"]}
        for p in svc["spec"]["ports"]:
            assert p["targetPort"] in container_ports, f"{name}: {p}"
    for backend in BACKENDS:
        svc = one(default, "Service", f"omni-{backend}")
        assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {
            "grpc": port(container(default, backend), "grpc"),
            "metrics": port(container(default, backend), "metrics"),
        }


# --- network policies -------------------------------------------------------------------------------------------------


def allowed(objs: list[dict], src_labels: dict, src_namespace: str, dst: str, port_name: str) -> bool:
    """Does a NetworkPolicy-enforcing cluster admit src -> pod `dst` on its named container port?"""
    labels, spec = pod_labels(objs)[dst]
    number = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c["ports"]}[port_name]
    policies = [p for p in find(objs, "NetworkPolicy") if selects(p["spec"]["podSelector"]["matchLabels"], labels)]
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            ports_ok = "ports" not in rule or any(p["port"] in (port_name, number) for p in rule["ports"])
            peers = rule.get("from")
            peer_ok = peers is None or any(peer_admits(peer, src_labels, src_namespace) for peer in peers)
            if ports_ok and peer_ok:
                return True
    return False


def peer_admits(peer: dict, labels: dict, namespace: str) -> bool:
    if "namespaceSelector" in peer:  # only `{}` (every namespace) is used by the chart
        assert peer["namespaceSelector"] == {}
        return selects(peer.get("podSelector", {}).get("matchLabels", {}), labels)
    return namespace == "tts" and selects(peer["podSelector"].get("matchLabels", {}), labels)


def test_network_policies_allow_exactly_the_needed_flows(default: list[dict]) -> None:
    pods = pod_labels(default)
    gateway, talker, refenc = (pods[f"omni-{c}"][0] for c in ("gateway", "talker", "refenc"))
    outsider = {"app": "curl"}
    prometheus = {"app.kubernetes.io/name": "prometheus"}
    for backend in BACKENDS:
        dst = f"omni-{backend}"
        assert allowed(default, gateway, "tts", dst, "grpc")
        assert not allowed(default, outsider, "tts", dst, "grpc")
        assert not allowed(default, outsider, "other", dst, "grpc")
        assert allowed(default, prometheus, "monitoring", dst, "metrics")
    assert not allowed(default, talker, "tts", "omni-codec", "grpc")  # backends never call each other
    assert not allowed(default, refenc, "tts", "omni-talker", "grpc")
    assert allowed(default, refenc, "tts", "omni-redis", "redis")  # only the reference encoder reaches Redis
    for src in (gateway, talker, outsider):
        assert not allowed(default, src, "tts", "omni-redis", "redis")
    assert allowed(default, outsider, "other", "omni-gateway", "http")  # the API is public by default
    restricted = render(
        networkPolicy={"gatewayFrom": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "ingress"}}}]}
    )
    assert allowed(restricted, {"app": "ingress"}, "edge", "omni-gateway", "http")
    assert not allowed(restricted, outsider, "other", "omni-gateway", "http")
    assert not find(render(networkPolicy={"enabled": False}), "NetworkPolicy")


# --- redis, secrets, monitoring, autoscaling, exposure, helm test -----------------------------------------------------


def test_bundled_redis_is_durable_and_wired_to_refenc(default: list[dict]) -> None:
    sts = one(default, "StatefulSet", "omni-redis")
    (c,) = sts["spec"]["template"]["spec"]["containers"]
    args = c["args"]
    flags = {args[i]: args[i + 1] for i in range(1, len(args) - 1, 2)}
    assert flags["--appendonly"] == "yes" and flags["--appendfsync"] == "always"
    assert flags["--maxmemory-policy"].startswith("volatile-")  # cache entries (TTL) evicted, voices never
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert {"name": "data", "mountPath": flags["--dir"]} in c["volumeMounts"] and claim["metadata"]["name"] == "data"
    assert env(container(default, "refenc"))["OMNI_REFENC_REDIS_URL"] == f"redis://omni-redis:{port(c, 'redis')}/0"
    external = render(redis={"enabled": False, "externalUrl": "redis://cache.example:6380/2"})
    assert not find(external, "StatefulSet") and not find(external, "Service", "omni-redis")
    assert env(container(external, "refenc"))["OMNI_REFENC_REDIS_URL"] == "redis://cache.example:6380/2"


def test_api_keys_secret_is_what_the_gateway_reads(tmp_path: Path) -> None:
    from omni.services.gateway.auth import ApiKeys

    objs = render(apiKeys={"keys": ["key-one", "key-two"]})
    secret = one(objs, "Secret", "omni-api-keys")
    c = container(objs, "gateway")
    spec = pod_spec(objs, "gateway")
    mount = next(m for m in c["volumeMounts"] if m["name"] == "api-keys")
    volume = next(v for v in spec["volumes"] if v["name"] == "api-keys")
    assert volume["secret"]["secretName"] == "omni-api-keys"
    path = env(c)["OMNI_GATEWAY_API_KEYS_FILE"]
    key = os.path.relpath(path, mount["mountPath"])
    (tmp_path / "keys").write_text(secret["stringData"][key])
    keys = ApiKeys.load(str(tmp_path / "keys"), env_var="OMNI_TEST_NO_SUCH_VAR")
    assert keys.enabled and keys.check_header("Bearer key-one") and keys.check_header("Bearer key-two")
    assert not keys.check_header("Bearer key-three")
    assert not find(render(), "Secret") and "OMNI_GATEWAY_API_KEYS_FILE" not in env(container(render(), "gateway"))
    existing = render(apiKeys={"existingSecret": "mine"})
    assert not find(existing, "Secret")
    assert next(v for v in pod_spec(existing, "gateway")["volumes"] if v["name"] == "api-keys")["secret"] == {
        "secretName": "mine"
    }


def test_prometheus_operator_objects_only_with_their_crds(default: list[dict]) -> None:
    assert not find(default, "ServiceMonitor") and not find(default, "PrometheusRule")
    objs = render(monitoring={"forceCRDs": True})
    monitor = one(objs, "ServiceMonitor", "omni")
    pods = pod_labels(objs)
    services = [
        s for s in find(objs, "Service") if selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    allowed_components = monitor["spec"]["selector"]["matchExpressions"][0]["values"]
    scraped = {
        s["metadata"]["name"]
        for s in services
        if s["metadata"]["labels"]["app.kubernetes.io/component"] in allowed_components
    }
    assert scraped == {f"omni-{c}" for c in COMPONENTS} and "omni-redis" in pods
    endpoint_ports = {e["port"] for e in monitor["spec"]["endpoints"]}
    assert endpoint_ports == {"metrics", "http"}
    rule = one(objs, "PrometheusRule", "omni")
    assert rule["spec"] == yaml.safe_load((CHART / "files" / "alerts.yml").read_text())


def test_dashboards_are_configmaps_for_the_grafana_sidecar(default: list[dict]) -> None:
    import json

    maps = [m for m in find(default, "ConfigMap") if m["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert {m["metadata"]["name"] for m in maps} == {
        f"omni-dashboard-{n}" for n in ("overview", "talker", "codec", "cache")
    }
    for m in maps:
        ((name, body),) = m["data"].items()
        dashboard = json.loads(body)
        assert dashboard == json.loads((CHART / "dashboards" / name.removeprefix("omni-")).read_text())


def test_autoscaling_off_by_default_hpa_or_keda_when_on(default: list[dict]) -> None:
    assert not find(default, "HorizontalPodAutoscaler") and not find(default, "ScaledObject")
    assert all(one(default, "Deployment", f"omni-{c}")["spec"]["replicas"] >= 1 for c in COMPONENTS)
    on = {c: {"autoscaling": {"enabled": True}} for c in COMPONENTS}
    hpa_objs = render(**on)
    for c in COMPONENTS:
        hpa = one(hpa_objs, "HorizontalPodAutoscaler", f"omni-{c}")
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"omni-{c}"}
        assert "replicas" not in one(hpa_objs, "Deployment", f"omni-{c}")["spec"]  # the HPA owns it
    metrics = {
        c: one(hpa_objs, "HorizontalPodAutoscaler", f"omni-{c}")["spec"]["metrics"][0]["pods"]["metric"]["name"]
        for c in COMPONENTS
    }
    assert metrics == {
        "gateway": "omni_gateway_requests_in_flight",
        "talker": "omni_talker_active_slots",
        "codec": "omni_codec_active_streams",
        "refenc": "omni_refenc_encode_queue_depth",
    }
    keda = render(autoscaling={"kind": "keda"}, **on)
    scaled = one(keda, "ScaledObject", "omni-codec")
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and "omni_codec_active_streams{" in trigger["metadata"]["query"]
    assert 'app_kubernetes_io_component="codec"' in trigger["metadata"]["query"]


def test_pdbs_select_each_component(default: list[dict]) -> None:
    pods = pod_labels(default)
    for c in COMPONENTS:
        pdb = one(default, "PodDisruptionBudget", f"omni-{c}")
        assert [p for p, (labels, _) in pods.items() if selects(pdb["spec"]["selector"]["matchLabels"], labels)] == [
            f"omni-{c}"
        ]


def test_ingress_and_http_route_point_at_the_gateway() -> None:
    objs = render(
        ingress={"enabled": True, "host": "tts.example.org"},
        httpRoute={"enabled": True, "parentRefs": [{"name": "public"}], "hostnames": ["tts.example.org"]},
    )
    ingress = one(objs, "Ingress", "omni-gateway")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "omni-gateway", "port": {"name": "http"}}
    route = one(objs, "HTTPRoute", "omni-gateway")
    assert route["spec"]["parentRefs"] == [{"name": "public"}]
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "omni-gateway", "port": 80}]
    with pytest.raises(helm.HelmError, match="httpRoute.parentRefs is required"):
        render(httpRoute={"enabled": True})


def test_helm_test_hook_sends_a_valid_speech_request(default: list[dict]) -> None:
    import json

    from omni.services.gateway.schemas import SpeechRequest

    pod = one(default, "Pod", "omni-test-synthesis")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (c,) = pod["spec"]["containers"]
    e = env(c)
    assert e["OMNI_TEST_URL"] == "http://omni-gateway:80/v1/audio/speech"
    SpeechRequest.model_validate(json.loads(e["OMNI_TEST_REQUEST"]))
    compile(c["args"][0], "helm-test", "exec")  # the inline script is valid Python
    keyed = one(render(apiKeys={"keys": ["k"]}), "Pod", "omni-test-synthesis")
    assert keyed["spec"]["volumes"][0]["secret"]["secretName"] == "omni-api-keys"


def test_pods_run_as_non_root_with_read_only_root(default: list[dict]) -> None:
    for c in COMPONENTS:
        spec = pod_spec(default, c)
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["automountServiceAccountToken"] is False
        ctr = container(default, c)
        assert ctr["securityContext"]["readOnlyRootFilesystem"] is True
        assert {"name": "tmp", "mountPath": "/tmp"} in ctr["volumeMounts"]
        model = next(m for m in ctr["volumeMounts"] if m["name"] == "model")
        assert model["readOnly"] is True and ctr["image"].startswith("ghcr.io/omni-tts/omni-")


# --- the rendered containers, run for real ----------------------------------------------------------------------------


def local_command(c: dict, model_dir: Path, ports: dict[str, dict[str, int]], component: str) -> list[str]:
    """The container's args with ports moved to free loopback ports, Service names to those ports and the model
    path to a local checkpoint; everything else exactly as rendered."""
    mapped = {
        "--host": "127.0.0.1",
        "--model": str(model_dir),
        "--port": str(ports[component]["http" if component == "gateway" else "grpc"]),
        "--metrics-port": str(ports[component].get("metrics")),
        "--grpc-port": str(ports[component].get("grpc")),
        **{f"--{b}s": f"127.0.0.1:{ports[b]['grpc']}" for b in BACKENDS},
    }
    out = []
    for a in c["args"]:
        flag, eq, _ = a.partition("=")
        out.append(f"{flag}={mapped[flag]}" if eq else a)
    return [sys.executable, "-m", "omni.cli", *out]


async def kubelet_grpc_probe(port_number: int, deadline_s: float, proc: subprocess.Popen) -> int | None:
    """What the kubelet's grpc probe does: grpc.health.v1 Check with service "" until SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    status = None
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port_number}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        while loop.time() < end and proc.poll() is None:
            try:
                status = (await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)).status
            except grpc.aio.AioRpcError:
                status = None
            if status == health_pb2.HealthCheckResponse.SERVING:
                break
            await asyncio.sleep(0.2)
    return status


def http_status(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=5).status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def test_rendered_containers_run_and_the_helm_test_synthesizes(tiny_model_dir, tmp_path: Path) -> None:
    """The four containers run with exactly the rendered args and env (ports and names mapped to loopback, the
    model to a tiny checkpoint): the kubelet's probes pass on the probed ports, every metrics endpoint serves its
    series, and the `helm test` pod's own script completes a synthesis through the gateway."""
    from grpc_health.v1 import health_pb2

    objs = render(profile="qwen3-tts-0.6b-cpu", test={"request": {"max_new_tokens": 8}})
    model_dir = tiny_model_dir("custom_voice")
    ports = {c: {name: free_port() for name in ("grpc", "metrics")} for c in BACKENDS}
    ports["gateway"] = {"http": free_port(), "grpc": free_port()}
    procs: dict[str, subprocess.Popen] = {}
    with RedisServer() as redis:
        try:
            for component in (*BACKENDS, "gateway"):
                c = container(objs, component)
                rendered_env = env(c)
                if component == "refenc":
                    assert rendered_env["OMNI_REFENC_REDIS_URL"] == "redis://omni-redis:6379/0"
                    rendered_env["OMNI_REFENC_REDIS_URL"] = redis.url  # cluster DNS -> the local server
                rendered_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
                procs[component] = subprocess.Popen(
                    local_command(c, model_dir, ports, component),
                    env={**os.environ, **rendered_env},
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp_path / f"{component}.log", "w"),  # noqa: SIM115 (closed with the process)
                )

            async def probe_backends():
                return await asyncio.gather(*(kubelet_grpc_probe(ports[b]["grpc"], 300, procs[b]) for b in BACKENDS))

            for component, status in zip(BACKENDS, asyncio.run(probe_backends()), strict=True):
                log = (tmp_path / f"{component}.log").read_text()[-2000:]
                assert status == health_pb2.HealthCheckResponse.SERVING, f"{component}: {log}"
                body = urllib.request.urlopen(f"http://127.0.0.1:{ports[component]['metrics']}/metrics").read()
                assert f"omni_{component}_".encode() in body

            gateway = container(objs, "gateway")
            base = f"http://127.0.0.1:{ports['gateway']['http']}"
            for _ in range(600):  # the startup probe's budget, polled like the kubelet
                if http_status(base + gateway["startupProbe"]["httpGet"]["path"]) == 200:
                    break
                assert procs["gateway"].poll() is None, (tmp_path / "gateway.log").read_text()[-2000:]
                time.sleep(0.5)
            for probe in ("readinessProbe", "livenessProbe"):
                for _ in range(120):
                    if http_status(base + gateway[probe]["httpGet"]["path"]) == 200:
                        break
                    time.sleep(0.5)
                assert http_status(base + gateway[probe]["httpGet"]["path"]) == 200, probe
            metrics = urllib.request.urlopen(base + "/metrics").read()
            assert b"omni_gateway_requests_in_flight" in metrics

            # the helm test pod's script, with its Service URL pointed at the local gateway
            (test_container,) = one(objs, "Pod", "omni-test-synthesis")["spec"]["containers"]
            test_env = env(test_container)
            test_env["OMNI_TEST_URL"] = test_env["OMNI_TEST_URL"].replace("http://omni-gateway:80", base)
            result = subprocess.run(
                [sys.executable, *test_container["command"][1:], test_container["args"][0]],
                env={**os.environ, **test_env},
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0 and "synthesis ok" in result.stdout, result.stdout + result.stderr
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
