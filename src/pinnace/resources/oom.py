"""The oom_score_adj the kubelet gives a container's processes, as Kubernetes v1.32
(pkg/kubelet/qos/policy.go).

The kernel's OOM killer picks the process with the highest badness: roughly its share of memory
in thousandths, plus oom_score_adj (-1000 to 1000). The kubelet sets:

- node-critical pods (static, mirror or priority >= 2000000000, and priorityClassName
  system-node-critical) and Guaranteed pods: -997;
- BestEffort pods: 1000, killed first;
- Burstable containers: 1000 - 1000 * memoryRequest / memoryCapacity (integer division), so
  a container that requests more of the node is killed later; raised to at least 3 (a
  Guaranteed container using all the node's memory scores about 1000 - 997 = 3, and a
  Burstable one must not rank below it) and 1000 lowered to 999 (below BestEffort);
- a sidecar (restartable init container) of a Burstable pod: at most the score of the app
  container with the smallest memory request, so the sidecar is not killed before the app it
  serves (SidecarContainers, beta and on by default in v1.32).

Pinnace follows v1.32: -997 and a floor of 3. Older kubelets and many articles say -998 and a
floor of 2. At -998 a Guaranteed container tied with the pod's sandbox (pause) process, also
-998, and an OOM in the pod could kill the sandbox first, taking the whole pod down
(kubernetes/kubernetes#72294); at -997 the workload's own processes go before the sandbox, and
the kubelet and kube-proxy (-999) outlast both.

With in-place resize (InPlacePodVerticalScaling, alpha in v1.32) the node agent passes the
pod as allocated, so a container's score follows the memory request it was started with; a
resize applied in place leaves the score as it was, as the kubelet sets it only at creation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.resources.names import MEMORY
from pinnace.resources.pod import ContainerResources, containers, pod_spec
from pinnace.resources.qos import BEST_EFFORT, GUARANTEED, recorded_qos_class

__all__ = [
    "BEST_EFFORT_OOM_SCORE_ADJ",
    "GUARANTEED_OOM_SCORE_ADJ",
    "KUBELET_OOM_SCORE_ADJ",
    "KUBE_PROXY_OOM_SCORE_ADJ",
    "is_critical_pod",
    "is_node_critical_pod",
    "oom_score_adj",
]

KUBELET_OOM_SCORE_ADJ = -999
KUBE_PROXY_OOM_SCORE_ADJ = -999
GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SYSTEM_NODE_CRITICAL = "system-node-critical"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
API_SERVER_SOURCE = "api"


def oom_score_adj(pod: Any, container_name: str, memory_capacity: int) -> int:
    """The oom_score_adj of `container_name` in `pod` on a node with `memory_capacity` bytes.

    Raises ValueError when the pod has no container of that name, or memory_capacity is not
    positive.
    """
    if isinstance(memory_capacity, bool) or not isinstance(memory_capacity, int):
        raise ValueError(f"memory capacity must be an int of bytes, not {memory_capacity!r}")
    if memory_capacity <= 0:
        raise ValueError(f"memory capacity must be positive, not {memory_capacity}")
    container = _find_container(pod, container_name)
    if is_node_critical_pod(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos = recorded_qos_class(pod)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ

    adj = _burstable_score(_memory_request(container), memory_capacity)
    if container.is_sidecar:
        app_requests = [_memory_request(c) for c in containers(pod, "containers")]
        if not app_requests:
            raise ValueError("spec.containers: a pod needs at least one container")
        adj = min(adj, _burstable_score(min(app_requests), memory_capacity))
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:
        return adj - 1
    return adj


def is_critical_pod(pod: Any) -> bool:
    """Static pods, mirror pods and pods with at least system-cluster-critical priority."""
    annotations = _annotations(pod)
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    if source is not None and source != API_SERVER_SOURCE:
        return True
    if CONFIG_MIRROR_ANNOTATION in annotations:
        return True
    priority = pod_spec(pod).get("priority")
    return (
        isinstance(priority, int)
        and not isinstance(priority, bool)
        and priority >= SYSTEM_CRITICAL_PRIORITY
    )


def is_node_critical_pod(pod: Any) -> bool:
    """A critical pod in the system-node-critical priority class."""
    return is_critical_pod(pod) and pod_spec(pod).get("priorityClassName") == SYSTEM_NODE_CRITICAL


def _burstable_score(memory_request: int, memory_capacity: int) -> int:
    # Go's int64 division truncates towards zero; Python's // floors.
    product = 1000 * memory_request
    quotient = abs(product) // memory_capacity
    return 1000 - (quotient if product >= 0 else -quotient)


def _memory_request(container: ContainerResources) -> int:
    memory = container.requests.get(MEMORY)
    return 0 if memory is None else memory.value()


def _find_container(pod: Any, name: str) -> ContainerResources:
    for c in containers(pod, "containers", "initContainers", "ephemeralContainers"):
        if c.name == name:
            return c
    raise ValueError(f"pod has no container named {name!r}")


def _annotations(pod: Any) -> Mapping[str, Any]:
    pod_spec(pod)  # the pod itself must be an object
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}
