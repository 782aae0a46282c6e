"""Node operations with real kubectl 1.32: taints, cordon, drain through the eviction API and
PodDisruptionBudgets, describe node, and events. There is no node agent here, so pods are
bound to a Node object with the Python client, as the scheduler would bind them."""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from tests.http.conftest import KUBECTL, Cluster
from tests.http.test_kubectl import NODE

DRAIN = ("--ignore-daemonsets", "--delete-emptydir-data", "--force", "--grace-period=0")
"""What a user types to drain a node of bare pods at once: --force because they have no
controller, --grace-period=0 because no kubelet will finish a graceful deletion."""


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def bind(core: client.CoreV1Api, pod: str, node: str) -> None:
    target = client.V1ObjectReference(api_version="v1", kind="Node", name=node)
    binding = client.V1Binding(metadata=client.V1ObjectMeta(name=pod), target=target)
    # The server answers a Status, which the generated client cannot read as a V1Binding.
    core.create_namespaced_binding("default", binding, _preload_content=False)


def run_pods(cluster: Cluster, core: client.CoreV1Api, node: str, *names: str) -> None:
    for name in names:
        cluster.ok("run", name, "--image=nginx:1.27", f"--labels=app={name}")
        bind(core, name, node)


def test_taint_and_untaint(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="tainted"))
    assert cluster.ok("taint", "node", "tainted", "gpu=true:NoSchedule").strip() == (
        "node/tainted tainted"
    )
    taints = "jsonpath={.spec.taints}"
    assert cluster.ok("get", "node", "tainted", "-o", taints) == (
        '[{"effect":"NoSchedule","key":"gpu","value":"true"}]'
    )
    assert "Taints:             gpu=true:NoSchedule" in cluster.ok("describe", "node", "tainted")
    clash = cluster.kubectl("taint", "node", "tainted", "gpu=false:NoSchedule")
    assert clash.returncode == 1
    assert "node tainted already has gpu taint(s) with same effect(s) and --overwrite is false" in (
        clash.stderr
    )
    assert cluster.ok("taint", "node", "tainted", "gpu:NoSchedule-").strip() == (
        "node/tainted untainted"
    )
    assert cluster.ok("get", "node", "tainted", "-o", taints) == ""
    assert "Taints:             <none>" in cluster.ok("describe", "node", "tainted")


def test_cordon_and_uncordon(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="cordoned"))
    assert cluster.ok("cordon", "cordoned").strip() == "node/cordoned cordoned"
    row = cluster.ok("get", "node", "cordoned").splitlines()[1].split()
    assert row[:2] == ["cordoned", "Unknown,SchedulingDisabled"]
    assert cluster.ok("get", "node", "cordoned", "-o", "jsonpath={.spec.unschedulable}") == "true"
    assert cluster.ok("uncordon", "cordoned").strip() == "node/cordoned uncordoned"
    assert cluster.ok("get", "node", "cordoned").splitlines()[1].split()[:2] == [
        "cordoned",
        "Unknown",
    ]


def test_describe_node_lists_its_pods(cluster: Cluster, core: client.CoreV1Api) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="busy"))
    run_pods(cluster, core, "busy", "busy-a", "busy-b")
    wide = cluster.ok("get", "pod", "busy-a", "-o", "wide").splitlines()[1].split()
    assert wide[:3] + wide[6:7] == ["busy-a", "0/1", "Pending", "busy"]
    described = cluster.ok("describe", "node", "busy")
    assert "Non-terminated Pods:          (2 in total)" in described
    assert {"busy-a", "busy-b"} <= set(described.split("Non-terminated Pods:")[1].split())


def test_drain_evicts_bound_pods(cluster: Cluster, core: client.CoreV1Api) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="drained"))
    run_pods(cluster, core, "drained", "drain-a", "drain-b")
    refused = cluster.kubectl("drain", "drained", "--ignore-daemonsets", "--timeout=30s")
    assert refused.returncode == 1
    assert (
        "cannot delete Pods that declare no controller (use --force to override): "
        "default/drain-a, default/drain-b" in refused.stderr
    )
    done = cluster.kubectl("drain", "drained", *DRAIN, "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "node/drained already cordoned"
    assert {"pod/drain-a evicted", "pod/drain-b evicted"} <= set(done.stdout.splitlines())
    assert done.stdout.splitlines()[-1] == "node/drained drained"
    assert "NotFound" in cluster.kubectl("get", "pod", "drain-a").stderr
    unschedulable = "jsonpath={.spec.unschedulable}"
    assert cluster.ok("get", "node", "drained", "-o", unschedulable) == "true"


def test_a_disruption_budget_blocks_drain(
    cluster: Cluster, core: client.CoreV1Api, api: client.ApiClient
) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="guarded"))
    run_pods(cluster, core, "guarded", "guarded-a")
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    core.patch_namespaced_pod_status("guarded-a", "default", {"status": ready})
    cluster.ok("create", "pdb", "keep-one", "--selector=app=guarded-a", "--min-available=1")
    # No disruption controller yet: give the budget the status it would compute.
    policy = client.PolicyV1Api(api)
    generation = policy.read_namespaced_pod_disruption_budget("keep-one", "default")
    budget = {
        "observedGeneration": generation.metadata.generation,
        "disruptionsAllowed": 0,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
    }
    policy.patch_namespaced_pod_disruption_budget_status("keep-one", "default", {"status": budget})
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="guarded-a"))
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_pod_eviction("guarded-a", "default", eviction)
    assert e.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget." in e.value.body
    assert "The disruption budget keep-one needs 1 healthy pods and has 1 currently" in (
        e.value.body
    )
    refused = (
        'error when evicting pods/"guarded-a" -n "default" (will retry after 5s): Cannot evict '
        "pod as it would violate the pod's disruption budget.\n"
    )
    assert refused in _drain_until(cluster, "guarded", refused)
    assert cluster.ok("get", "pod", "guarded-a", "-o", "name").strip() == "pod/guarded-a"


def test_events_show_in_get_and_describe(cluster: Cluster, core: client.CoreV1Api) -> None:
    cluster.ok("run", "noticed", "--image=nginx:1.27")
    pod = core.read_namespaced_pod("noticed", "default")
    now = datetime.datetime.now(datetime.UTC)
    involved = client.V1ObjectReference(
        api_version="v1", kind="Pod", name="noticed", namespace="default", uid=pod.metadata.uid
    )
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="noticed.1"),
        involved_object=involved,
        reason="Scheduled",
        message="Successfully assigned default/noticed to node-a",
        type="Normal",
        source=client.V1EventSource(component="default-scheduler"),
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    core.create_namespaced_event("default", event)
    rows = cluster.ok("get", "events", "--field-selector", "involvedObject.name=noticed")
    header, row = rows.splitlines()
    assert header.split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert row.split()[1:] == [
        "Normal",
        "Scheduled",
        "pod/noticed",
        "Successfully",
        "assigned",
        "default/noticed",
        "to",
        "node-a",
    ]
    described = cluster.ok("describe", "pod", "noticed").split("Events:")[1].splitlines()
    assert described[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert described[3].split()[:2] == ["Normal", "Scheduled"]
    assert "default-scheduler" in described[3]


def _drain_until(cluster: Cluster, node: str, line: str) -> list[str]:
    """kubectl drain's error lines up to `line`; then it is stopped rather than left to retry
    every 5 s until its timeout."""
    args = ["--kubeconfig", str(cluster.kubeconfig), "drain", node, *DRAIN, "--timeout=30s"]
    drain = subprocess.Popen(
        [KUBECTL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert drain.stderr is not None
    seen: list[str] = []
    try:
        while line not in seen and (next_line := drain.stderr.readline()):
            seen.append(next_line)
    finally:
        drain.kill()
        drain.wait()
        drain.stderr.close()
    return seen


DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: main, image: busybox, command: [sleep, infinity]}]}
"""

REPLICASET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs}
spec:
  replicas: 1
  selector: {matchLabels: {app: web-rs}}
  template:
    metadata: {labels: {app: web-rs}}
    spec: {containers: [{name: main, image: busybox, command: [sleep, infinity]}]}
"""


OWNED_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: {owner}}}
  ownerReferences:
  - {{apiVersion: apps/v1, kind: {kind}, name: {owner}, uid: {uid}, controller: true}}
spec:
  nodeName: {node}
  containers: [{{name: main, image: busybox, command: [sleep, infinity]}}]
  volumes: [{{name: scratch, emptyDir: {{}}}}]
"""


def test_drain_leaves_daemonset_pods_and_asks_before_losing_emptydir_data(
    cluster: Cluster,
) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="workers"))
    cluster.ok("create", "-f", "-", stdin=DAEMONSET + "---\n" + REPLICASET)
    for kind, owner, pod in (("DaemonSet", "agent", "agent-w"), ("ReplicaSet", "web-rs", "web-w")):
        uid = cluster.ok("get", kind.lower(), owner, "-o", "jsonpath={.metadata.uid}")
        manifest = OWNED_POD.format(name=pod, kind=kind, owner=owner, uid=uid, node="workers")
        cluster.ok("create", "-f", "-", stdin=manifest)
    refused = cluster.kubectl("drain", "workers", "--ignore-daemonsets", "--timeout=30s")
    assert refused.returncode == 1
    assert (
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): "
        "default/web-w" in refused.stderr
    )
    done = cluster.kubectl(
        "drain", "workers", "--ignore-daemonsets", "--delete-emptydir-data", "--grace-period=0"
    )
    assert done.returncode == 0, done.stderr
    assert "Warning: ignoring DaemonSet-managed Pods: default/agent-w" in done.stderr
    assert "pod/web-w evicted" in done.stdout.splitlines()
    remaining = cluster.ok("get", "pods", "agent-w", "web-w", "-o", "name", "--ignore-not-found")
    assert remaining.split() == ["pod/agent-w"]
