"""The scheduler's cache (pkg/scheduler/backend/cache): the node table plus which pods are
assumed (placed by a decision, binding not yet confirmed by the API) and which are bound.

A decision assumes the pod on its node at once, so the next decision already sees the node's
resources taken; a failed bind forgets it. When the informer reports the pod bound, the
assumption is confirmed. A pod the cache already holds is never scheduled again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo


class CacheError(RuntimeError):
    pass


class Cache:
    def __init__(self, table: NodeTable | None = None) -> None:
        self.table = table if table is not None else NodeTable()
        self._assumed: dict[str, str] = {}  # pod key -> node, bind not yet confirmed
        self._bound: dict[str, str] = {}  # pod key -> node, seen bound by the informer
        self.version = 0
        """Counts the changes to the nodes and pods held: a cycle that reads the cache at one
        version reads what another did at the same version."""

    def knows(self, key: str) -> bool:
        """Whether the pod is assumed or bound: it must not be scheduled again."""
        return key in self._assumed or key in self._bound

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def node_of(self, key: str) -> str | None:
        return self._assumed.get(key) or self._bound.get(key)

    def pod(self, key: str) -> PodInfo | None:
        """The assumed or bound pod of `key`, as the cache holds it."""
        node_name = self.node_of(key)
        return None if node_name is None else self.table.pod(key, node_name)

    def assume(self, pod: PodInfo, node_name: str) -> None:
        if self.knows(pod.key):
            raise CacheError(f"pod {pod.key} is in the cache, so can't be assumed")
        self.version += 1
        self.table.add_pod(pod, node_name)
        self._assumed[pod.key] = node_name

    def forget(self, pod: PodInfo) -> None:
        """Undo an assumption whose bind failed."""
        node_name = self._assumed.pop(pod.key, None)
        if node_name is None:
            raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
        self.version += 1
        self.table.remove_pod(pod.key, node_name)

    # Informer events for pods bound to a node.
    def add_pod(self, pod: PodInfo) -> None:
        """The API shows the pod bound: confirm the assumption, or account a pod bound
        elsewhere."""
        self.version += 1
        placed_on = self._assumed.pop(pod.key, None) or self._bound.get(pod.key)
        if placed_on == pod.node_name:
            self.table.replace_pod(pod, pod.node_name)
        else:
            if placed_on is not None:
                self.table.remove_pod(pod.key, placed_on)
            self.table.add_pod(pod, pod.node_name)
        self._bound[pod.key] = pod.node_name

    def update_pod(self, pod: PodInfo) -> None:
        self.add_pod(pod)

    def remove_pod(self, key: str) -> None:
        node_name = self._bound.pop(key, None) or self._assumed.pop(key, None)
        if node_name is not None:
            self.version += 1
            self.table.remove_pod(key, node_name)

    # Informer events for nodes.
    def add_node(self, node: Mapping[str, Any]) -> None:
        self.version += 1
        self.table.add_node(node)

    def update_node(self, node: Mapping[str, Any]) -> None:
        self.version += 1
        self.table.add_node(node)

    def remove_node(self, name: str) -> None:
        self.version += 1
        self.table.remove_node(name)
