"""DefaultBinder (pkg/scheduler/framework/plugins/defaultbinder): binds the pod by creating a
v1 Binding. The core hands the Binding to `bind` (the API client's pods/binding create, or a
recorder in simulations); an exception from it is a failed bind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.scheduler.framework import SUCCESS, CycleState, Status, error
from pinnace.scheduler.podinfo import PodInfo

Binding = dict[str, Any]


def binding_for(pod: PodInfo, node_name: str) -> Binding:
    metadata = {"namespace": pod.namespace, "name": pod.name}
    if pod.uid:
        metadata["uid"] = pod.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"kind": "Node", "name": node_name},
    }


class DefaultBinder:
    name = "DefaultBinder"

    def __init__(self, bind: Callable[[Binding], object]) -> None:
        self._bind = bind

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        try:
            self._bind(binding_for(pod, node_name))
        except Exception as e:  # any failure of the binding call fails this bind only
            return error(str(e) or type(e).__name__)
        return SUCCESS
