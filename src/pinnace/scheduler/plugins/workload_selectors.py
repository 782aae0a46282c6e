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
            kind: {} for kind in (REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)
        }
        # namespace -> name -> a Service's selector and what it compiles to (None: it has
        # none), as GetPodServices lists a namespace's: every pod scheduled looks them up.
        self._services: dict[str, dict[str, tuple[Mapping[str, str], LabelSelector] | None]] = {}

    def set(self, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
        if kind == SERVICE:
            selector = (obj.get("spec") or {}).get("selector")
            compiled = (selector, selector_from_set(selector)) if selector else None
            self._services.setdefault(namespace, {})[name] = compiled
            return
        self._objects[kind][(namespace, name)] = obj

    def delete(self, kind: str, namespace: str, name: str) -> None:
        if kind != SERVICE:
            self._objects[kind].pop((namespace, name), None)
            return
        services = self._services.get(namespace, {})
        services.pop(name, None)
        if not services:
            self._services.pop(namespace, None)

    def __call__(self, pod: PodInfo) -> LabelSelector:
        """DefaultSelector(pod): empty when nothing selects or controls the pod."""
        label_set: dict[str, str] = {}
        for compiled in self._services.get(pod.namespace, {}).values():
            if compiled is not None and compiled[1].matches(pod.labels):
                label_set.update(compiled[0])
        selector = selector_from_set(label_set) if label_set else _EVERYTHING
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


_EVERYTHING = selector_from_set({})


def _controller_of(pod: PodInfo) -> Mapping[str, Any] | None:
    for ref in (pod.pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None
