"""Where a plan's cluster comes from, and its workloads.

- `from_cluster(kubeconfig)`: a snapshot of a running cluster through the Kubernetes API, with
  the official `kubernetes` client (so any kubeconfig works: `pinnace up`'s, or a real
  cluster's with its certificates, tokens or exec plugins). It lists Nodes, Pods (those not
  finished), Namespaces, PriorityClasses, PodDisruptionBudgets, LimitRanges, RuntimeClasses and
  the workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs), in pages of 500 as
  kubectl does; a kind the server does not serve is empty. It only reads.
- `from_file(path)`: a Scenario file (docs/simulation.md: its node pools, scheduler
  configuration and objects; its timeline and workload generators are not part of a cluster's
  state and are left out) or a cluster file (`kind: Cluster`, node pools only). The nodes are
  the pools' Nodes as their kubelets register them; the objects are made into pods by the
  controllers (`pinnace.plan.materialize`) and placed by kube-scheduler
  (`pinnace.plan.placement`), so the snapshot is the cluster as it would be once settled: its
  pods Running and Ready from the snapshot's time on (the simulated clock's epoch).
- `load_workloads(paths)`: manifests from files or directories, as `kubectl apply -f` reads
  them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from pinnace.api.manifest import ManifestError, load_manifests, yaml_problem
from pinnace.api.objects import Object
from pinnace.clock import DEFAULT_EPOCH, format_time
from pinnace.kubelet.cluster_config import ClusterConfigError, load_pools, node_configs
from pinnace.kubelet.node_status import node_object
from pinnace.plan.cluster import (
    OBJECT_RESOURCES,
    PlanError,
    Snapshot,
    as_template,
    is_finished,
    pools_of,
)
from pinnace.plan.materialize import materialize
from pinnace.plan.placement import Placer
from pinnace.scheduler.config import ConfigError
from pinnace.scheduler.config import load_file as load_scheduler_config
from pinnace.sim.scenario import ScenarioError, load_scenario

PAGE_SIZE = 500
REQUEST_TIMEOUT = 60.0
PATHS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
    "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
    "limitranges": "/api/v1/limitranges",
    "runtimeclasses": "/apis/node.k8s.io/v1/runtimeclasses",
    "deployments": "/apis/apps/v1/deployments",
    "replicasets": "/apis/apps/v1/replicasets",
    "statefulsets": "/apis/apps/v1/statefulsets",
    "daemonsets": "/apis/apps/v1/daemonsets",
    "jobs": "/apis/batch/v1/jobs",
    "services": "/api/v1/services",
}
SCENARIO_KIND = "Scenario"
CLUSTER_KIND = "Cluster"


def from_cluster(
    kubeconfig: str | os.PathLike[str], *, context: str | None = None, scheduler_config: str = ""
) -> Snapshot:
    """A snapshot of the cluster `kubeconfig` (its current context, or `context`) names."""
    # Loaded when used: the client package is heavy to import.
    from kubernetes import config as kube_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException

    try:
        api = kube_config.new_client_from_config(config_file=os.fspath(kubeconfig), context=context)
    except (ConfigException, OSError, yaml.YAMLError) as e:
        raise PlanError(f"kubeconfig {kubeconfig}: {e}") from None
    source = api.configuration.host

    def list_all(path: str) -> list[Object]:
        items: list[Object] = []
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", PAGE_SIZE)]
            if token:
                query.append(("continue", token))
            try:
                response = api.call_api(
                    path,
                    "GET",
                    query_params=query,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                    _request_timeout=REQUEST_TIMEOUT,
                )
            except ApiException as e:
                if e.status == 404:  # a kind this server does not serve
                    return []
                raise PlanError(f"{source}: GET {path}: {e.status} {e.reason}: {e.body}") from None
            except OSError as e:
                raise PlanError(f"cannot reach the API server {source}: {e}") from None
            page = json.loads(response.data)
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items

    try:
        return _snapshot(source, list_all, time.time(), _scheduler_config(scheduler_config))
    finally:
        api.close()


def _snapshot(
    source: str, list_all: Callable[[str], list[Object]], now: float, config: Any
) -> Snapshot:
    listed = {resource: list_all(path) for resource, path in PATHS.items()}
    nodes = listed.pop("nodes")
    pods = [p for p in listed.pop("pods") if not is_finished(p)]
    objects = {r: listed[r] for r in OBJECT_RESOURCES}
    return Snapshot(source, nodes, pods, objects, pools_of(nodes), config, now)


def _scheduler_config(path: str) -> Any:
    if not path:
        return None
    try:
        return load_scheduler_config(path)
    except ConfigError as e:
        raise PlanError(f"{path}: {e}") from None


def from_file(
    path: str | os.PathLike[str], *, seed: int = 0, scheduler_config: str = ""
) -> Snapshot:
    """The cluster a Scenario or cluster file describes, once settled (see the module's
    docstring)."""
    source = os.fspath(path)
    kind = _kind_of(source)
    if kind == SCENARIO_KIND:
        try:
            scenario = load_scenario(source)
        except ScenarioError as e:
            raise PlanError(str(e)) from None
        configs, pools = scenario.cluster.nodes, list(scenario.cluster.pools.values())
        objects, config = scenario.objects, scenario.cluster.scheduler_config
    elif kind == CLUSTER_KIND:
        try:
            pools = load_pools(source)
        except ClusterConfigError as e:
            raise PlanError(str(e)) from None
        configs, objects, config = node_configs(pools), [], None
    else:
        raise PlanError(
            f"{source}: not a Scenario (sim.pinnace.dev/v1alpha1) or a Cluster "
            f"(pinnace.dev/v1alpha1) file: kind {kind!r}"
        )
    config = _scheduler_config(scheduler_config) or config
    now = format_time(DEFAULT_EPOCH)
    nodes = [node_object(c, now) for c in configs]
    templates = {p.name: as_template(node_object(p.numbered(0, 0), now)) for p in pools}
    made = materialize(objects, nodes=nodes, seed=seed)
    settled = Snapshot(source, nodes, [], made.objects, templates, config, DEFAULT_EPOCH)
    placer = Placer(settled, seed=seed, preemption=_may_preempt(made.pods))
    placer.place(made.pods)
    settled.pods = [_started(p, now) for p in placer.pods.values()]
    return settled


def _may_preempt(pods: Sequence[Object]) -> bool:
    """Whether placing `pods`, on nodes running nothing else, could preempt any of them: not
    when they are all of one priority, as only a pod of lower priority than the preemptor is
    ever a victim. Preemption that finds no victim changes nothing but the FailedScheduling
    message, which the snapshot does not keep; and trying it costs a pass over every pod for
    each pod left pending."""
    return len({p["spec"].get("priority") or 0 for p in pods}) > 1


def _started(pod: Object, now: str) -> Object:
    """A pod placed on a node as it would be once its kubelet has started it: Running and
    Ready since the snapshot's time; one left pending as the API shows it, Pending."""
    if not pod["spec"].get("nodeName"):
        return {**pod, "status": {"phase": "Pending"}}
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": now}
    return {**pod, "status": {"phase": "Running", "startTime": now, "conditions": [ready]}}


def _kind_of(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise PlanError(f"{path}: {e.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not YAML: {yaml_problem(e)}") from None
    return str(raw.get("kind", "")) if isinstance(raw, dict) else ""


def load_workloads(paths: Sequence[str | os.PathLike[str]]) -> list[Object]:
    """The objects in the files and directories `paths`, in order."""
    found: list[Object] = []
    for path in paths:
        try:
            found += [m.obj for m in load_manifests(path)]
        except (ManifestError, OSError) as e:
            raise PlanError(str(e)) from None
    return found
