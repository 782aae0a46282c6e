"""The selector of the workload a pod belongs to (kube-scheduler's helper.DefaultSelector), for
PodTopologySpread's default constraints: the selectors of the Services that select the pod,
and of its controlling ReplicationController, ReplicaSet or StatefulSet, merged.

`WorkloadSelectors` plays the part of kube-scheduler's listers: whoever feeds the scheduler
(the API adapter's informers) keeps it up to date with `set` and `delete`. Without it, or
with nothing in it, a pod has no workload selector and default constraints do not apply to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api.labels import LabelSelector, SelectorError, selector_from_dict, selector_from_set
from pinnace.scheduler.podinfo import PodInfo

SERVICE = "Service"
REPLICATION_CONTROLLER = "ReplicationController"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
_OWNER_KINDS = {
    ("v1", REPLICATION_CONTROLLER),
    ("apps/v1", REPLICA_SET),
    ("apps/v1", STATEFUL_SET),
}


class WorkloadSelectors:
    def __init__(self) -> None:
        # kind -> (namespace, name) -> object
        self._objects: dict[str, dict[tuple[str, str], Mapping[str, Any]]] = {
            kind: {} for kind in (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)
        }

    def set(self, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "default", meta.get("name") or "")
        self._objects[kind][key] = obj

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self._objects[kind].pop((namespace, name), None)

    def __call__(self, pod: PodInfo) -> LabelSelector:
        """DefaultSelector(pod): empty when nothing selects or controls the pod."""
        label_set: dict[str, str] = {}
        for (namespace, _), service in self._objects[SERVICE].items():
            selector = (service.get("spec") or {}).get("selector")
            if (
                namespace == pod.namespace
                and selector
                and selector_from_set(selector).matches(pod.labels)
            ):
                label_set.update(selector)
        selector = selector_from_set(label_set)
        owner = _controller_of(pod)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) not in _OWNER_KINDS:
            return selector
        kind = owner["kind"]
        controller = self._objects[kind].get((pod.namespace, owner.get("name") or ""))
        if controller is None:
            return selector
        spec = controller.get("spec") or {}
        if kind == REPLICATION_CONTROLLER:
            label_set.update(spec.get("selector") or {})
            return selector_from_set(label_set)
        try:
            other = selector_from_dict(spec.get("selector"))
        except SelectorError:
            return selector
        return LabelSelector((*selector.requirements, *other.requirements))


def _controller_of(pod: PodInfo) -> Mapping[str, Any] | None:
    for ref in (pod.pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None
