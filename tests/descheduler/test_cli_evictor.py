"""The DefaultEvictor's args as a user meets them: `pinnace deschedule --dry-run` against
`pinnace up --nodes 2`, with a Deployment, a DaemonSet and budgets kubectl created, both nodes
then tainted so that RemovePodsViolatingNodeTaints picks every pod; which of them the evictor
lets go is what descheduler v0.32's DefaultEvictor decides (evictDaemonSetPods,
ignorePodsWithoutPDB), and the pods it keeps are counted with its words; a plugin with
nothing to do says why, as the descheduler logs it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.descheduler.test_cli import deschedule
from tests.http.conftest import Cluster, launch, stop

AGENT = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: nginx:1.27}]
"""
TAINTS = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: taints
  pluginConfig:
  - name: DefaultEvictor
    args: {args}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
"""


@pytest.fixture(scope="module")
def tainted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-evictor"), flags=("--nodes", "2"))
    running.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    running.ok("create", "deployment", "solo", "--image=nginx:1.27")
    running.ok("apply", "-f", "-", stdin=AGENT)
    running.ok("create", "pdb", "web", "--selector=app=web", "--max-unavailable=1")
    running.ok("create", "pdb", "agent", "--selector=app=agent", "--max-unavailable=1")
    for workload in ("deployment/web", "deployment/solo", "daemonset/agent"):
        running.ok("rollout", "status", workload, "--timeout=60s")
    running.ok("taint", "node", "--all", "dedicated=db:NoSchedule")
    yield running
    stop(running)


def _report(cluster: Cluster, workdir: Path, args: str) -> tuple[list[str], list[str]]:
    """The apps of the pods the dry run would evict, and its held-back lines."""
    done = deschedule(cluster, workdir, TAINTS.replace("{args}", args), "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    apps = sorted(line.split()[1].split("-")[0] for line in lines[1:] if "NoSchedule" in line)
    return apps, [line for line in lines if "held back" in line]


def test_daemon_set_pods_are_kept_unless_evict_daemon_set_pods(
    tainted: Cluster, tmp_path: Path
) -> None:
    apps, held = _report(tainted, tmp_path, "{}")
    assert apps == ["solo", "web", "web"]
    assert held == [
        "2 pods held back: pod is related to daemonset and descheduler is not configured with "
        "evictDaemonSetPods"
    ]
    apps, held = _report(tainted, tmp_path, "{evictDaemonSetPods: true}")
    assert apps == ["agent", "agent", "solo", "web", "web"]
    assert held == []


def test_ignore_pods_without_pdb_keeps_the_pods_no_budget_covers(
    tainted: Cluster, tmp_path: Path
) -> None:
    apps, held = _report(
        tainted, tmp_path, "{evictDaemonSetPods: true, ignorePodsWithoutPDB: true}"
    )
    assert apps == ["agent", "agent", "web", "web"]
    assert held == ["1 pod held back: no PodDisruptionBudget found for pod"]


UTILIZATION = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: spread
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 10, memory: 10}, targetThresholds: {cpu: 20, memory: 20}}
  plugins:
    balance: {enabled: [LowNodeUtilization]}
"""


def test_a_plugin_with_nothing_to_do_says_why(tainted: Cluster, tmp_path: Path) -> None:
    """No pod requests anything: every node is under the thresholds (pods, left out, count
    as 100%)."""
    done = deschedule(tainted, tmp_path, UTILIZATION, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "0 pods would be evicted (dry run).",
        "LowNodeUtilization: All nodes are underutilized, nothing to do here",
    ]


REJECTED = """
apiVersion: batch/v1
kind: Job
metadata: {name: rejected}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeName: pinnace-node-1
      nodeSelector: {disk: nvme}
      containers: [{name: job, image: busybox}]
"""
LIFETIME = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: rejected
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 0, states: [NodeAffinity]}
  plugins:
    deschedule: {enabled: [PodLifeTime]}
"""


def test_pod_life_time_finds_pods_the_kubelet_rejected(tainted: Cluster, tmp_path: Path) -> None:
    """A Job's pod bound to a node its selector does not match fails with reason NodeAffinity;
    the `states` PodLifeTime accepts include that reason, as v0.32's do."""
    tainted.ok("apply", "-f", "-", stdin=REJECTED)
    tainted.ok(
        "wait", "pod", "-l", "job-name=rejected", "--for=jsonpath={.status.reason}=NodeAffinity"
    )
    time.sleep(1.1)  # older than 0 whole seconds
    done = deschedule(tainted, tmp_path, LIFETIME, "--dry-run")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:-1]]
    assert [(row[1].split("-")[0], row[3]) for row in rows] == [("rejected", "PodLifeTime")]


EXITED = """
apiVersion: batch/v1
kind: Job
metadata: {name: exited%(code)s}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeName: pinnace-node-2
      containers: [{name: job, image: busybox, command: [sh, -c, "sleep 1; exit %(code)s"]}]
"""
FAILED = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: failed
  pluginConfig:
  - name: RemoveFailedPods
    args: {exitCodes: [3]}
  plugins:
    deschedule: {enabled: [RemoveFailedPods]}
"""


def test_remove_failed_pods_by_exit_code(tainted: Cluster, tmp_path: Path) -> None:
    """Of the failed pods, only the one whose container exited 3."""
    for code in (3, 4):
        tainted.ok("apply", "-f", "-", stdin=EXITED % {"code": code})
        tainted.ok(
            "wait", "pod", "-l", f"job-name=exited{code}", "--for=jsonpath={.status.phase}=Failed"
        )
    done = deschedule(tainted, tmp_path, FAILED, "--dry-run")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:-1]]
    assert [(row[1].split("-")[0], row[3]) for row in rows] == [("exited3", "RemoveFailedPods")]


def test_eviction_failure_events(tainted: Cluster, tmp_path: Path) -> None:
    """With evictionFailureEventNotification, a pod whose eviction the budget refused gets a
    Warning event in the descheduler's words (runs last: it evicts)."""
    policy = "evictionFailureEventNotification: true\n" + TAINTS.replace(
        "{args}", "{labelSelector: {matchLabels: {app: web}}}"
    )
    done = deschedule(tainted, tmp_path, policy)
    assert done.returncode == 0, done.stderr
    assert "1 pod evicted." in done.stdout
    refused = done.stderr.split("not evicted: default/")[1].split(":")[0]
    events = tainted.ok(
        "get",
        "events",
        "--field-selector",
        "reason=EvictionFailed",
        "-o",
        "jsonpath={range .items[*]}{.type} {.involvedObject.name} {.message}{'\\n'}{end}",
    )
    node = tainted.ok("get", "pod", refused, "-o", "jsonpath={.spec.nodeName}")
    assert events.splitlines() == [
        f"Warning {refused} pod eviction from {node} node by sigs.k8s.io/descheduler failed: "
        f'error when evicting pod (ignoring) "{refused}": Cannot evict pod as it would violate '
        "the pod's disruption budget."
    ]
