"""What a scenario's timeline does to the cluster, each as a user or a cloud provider would:
through the API (apply, delete, scale, patch, cordon, drain by the eviction API) or to the
simulated machines (a node or a zone fails and recovers; a pool gains or loses nodes).

Drains run as kubectl drain --ignore-daemonsets --delete-emptydir-data --force does: the node
is cordoned, every pod on it but DaemonSets' and mirror pods is evicted, and an eviction a
PodDisruptionBudget refuses (429) is tried again every 5 s until the budget allows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import BACKGROUND
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType
from pinnace.clock.component import cancel_and_wait
from pinnace.cluster import ControlPlane
from pinnace.kubelet import NodeConfig
from pinnace.sim.scenario import (
    Action,
    AddNodes,
    Apply,
    Cordon,
    Delete,
    Drain,
    FailNode,
    FailZone,
    Patch,
    PoolSpec,
    RecoverNode,
    RecoverZone,
    Ref,
    RemoveNodes,
    Scale,
    Uncordon,
)

NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
ZONE_LABEL = "topology.kubernetes.io/zone"
POOL_LABEL = "pinnace.dev/node-pool"
EVICTION_RETRY_SECONDS = 5.0
"""kubectl drain tries an eviction a disruption budget refused again after 5 s."""
_PATCH_TYPES = {
    "merge": PatchType.MERGE,
    "strategic": PatchType.STRATEGIC_MERGE,
    "json": PatchType.JSON,
}


class ActionError(Exception):
    """A step could not be taken (an unknown kind, node or zone); the message says why, and
    `field`, when known, is the scenario's field at fault (`spec.timeline[3].scale`)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class Actions:
    """Takes timeline actions against `plane`, writing through `client`."""

    def __init__(
        self, plane: ControlPlane, client: LocalClient, pools: Mapping[str, PoolSpec]
    ) -> None:
        self._plane = plane
        self._client = client
        self._pools = pools
        self._drains: set[asyncio.Task[None]] = set()
        """The drains under way: each leaves the set when it ends."""
        self._numbered = {name: pool.count for name, pool in pools.items()}
        """The last number each pool gave a node: added nodes continue it, never reusing one."""

    async def stop(self) -> None:
        """End drains still under way (one that failed has told `take`'s caller)."""
        await cancel_and_wait(list(self._drains))
        self._drains.clear()

    async def take(self, action: Action) -> asyncio.Task[None] | None:
        """Take `action`; a drain goes on after it returns, in the task returned, which
        fails as `kubectl drain` does when an eviction fails otherwise than by a budget."""
        match action:
            case Apply(objects=objects):
                await self.apply(objects)
            case Delete(objects=refs):
                for ref in refs:
                    await self._ignoring_missing(
                        self._client.delete(_kind(ref), ref.namespace or "", ref.name, BACKGROUND)
                    )
            case Scale(ref=ref, replicas=replicas):
                namespace = ref.namespace or ""
                await self._client.update_scale(_kind(ref), namespace, ref.name, replicas)
            case Patch(ref=ref, patch=patch, patch_type=patch_type):
                await self._client.patch(
                    _kind(ref), ref.namespace or "", ref.name, patch, _PATCH_TYPES[patch_type]
                )
            case Cordon(node=node):
                await self._cordon(node, True)
            case Uncordon(node=node):
                await self._cordon(node, False)
            case Drain(node=node):
                await self._cordon(node, True)
                drain = asyncio.get_running_loop().create_task(self._drain(node))
                self._drains.add(drain)
                drain.add_done_callback(self._drains.discard)
                return drain
            case FailNode(node=node):
                await self._plane.nodes.fail_node(self._known(node))
            case RecoverNode(node=node):
                await self._plane.nodes.recover_node(self._known(node))
            case FailZone(zone=zone):
                for node in self._zone(zone):
                    if node not in self._plane.nodes.failed:
                        await self._plane.nodes.fail_node(node)
            case RecoverZone(zone=zone):
                for node in self._zone(zone):
                    await self._plane.nodes.recover_node(node)
            case AddNodes(pool=pool, count=count):
                await self._plane.nodes.add_nodes(self._new_nodes(pool, count))
            case RemoveNodes(pool=pool, count=count):
                for node in self._pool_nodes(pool)[-count:]:
                    await self._plane.nodes.remove_node(node)
        return None

    async def apply(self, objects: Iterable[Object]) -> None:
        """Server-side apply each object, as `kubectl apply --server-side` does: a namespaced
        object without a namespace is sent with the default one set in it (cli-runtime's
        SetNamespace), so an error names it `default/name`."""
        for obj in objects:
            kind = catalog.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
            if kind is None:
                raise ActionError(f"{obj.get('apiVersion')}/{obj.get('kind')} is not served")
            m = obj.get("metadata") or {}
            namespace = ""
            if kind.namespaced:
                namespace = m.get("namespace") or "default"
                if m.get("namespace") != namespace:
                    obj = {**obj, "metadata": {**m, "namespace": namespace}}
            await self._client.patch(kind, namespace, m.get("name", ""), obj, PatchType.APPLY)

    # --- nodes ------------------------------------------------------------------------------

    async def _cordon(self, node: str, unschedulable: bool) -> None:
        patch = {"spec": {"unschedulable": True if unschedulable else None}}
        await self._client.patch(NODES, "", self._known(node), patch, PatchType.MERGE)

    async def _drain(self, node: str) -> None:
        listed = await self._client.list(PODS, field_selector=f"spec.nodeName={node}")
        pending = [p for p in listed["items"] if _drained(p)]
        while pending:
            refused = []
            for pod in pending:
                m = pod["metadata"]
                try:
                    await self._client.evict(m["namespace"], m["name"])
                except StatusError as e:
                    if e.code == 429:
                        refused.append(pod)
                    elif e.code != 404:
                        where = f'pods/"{m["name"]}" -n "{m["namespace"]}"'
                        raise ActionError(f"error when evicting {where}: {e}") from e
            pending = refused
            if pending:
                await asyncio.sleep(EVICTION_RETRY_SECONDS)

    def _known(self, node: str) -> str:
        if not self._plane.nodes.has(node):
            raise ActionError(f'node "{node}" is not a node of this cluster')
        return node

    def _zone(self, zone: str) -> list[str]:
        nodes = sorted(
            c.name for c in self._plane.nodes.configs() if c.labels.get(ZONE_LABEL) == zone
        )
        if not nodes:
            raise ActionError(f'zone "{zone}" has no nodes')
        return nodes

    def _pool_nodes(self, pool: str) -> list[str]:
        configs = self._plane.nodes.configs()
        return [
            c.name
            for c in sorted(configs, key=lambda c: c.index)
            if c.labels.get(POOL_LABEL) == pool
        ]

    def _new_nodes(self, pool: str, count: int) -> list[NodeConfig]:
        first, index = self._numbered[pool] + 1, self._plane.nodes.next_index
        self._numbered[pool] += count
        return [self._pools[pool].numbered(first + i, index + i) for i in range(count)]

    async def _ignoring_missing(self, write: Any) -> None:
        try:
            await write
        except StatusError as e:
            if e.code != 404:
                raise


def _kind(ref: Ref) -> Kind:
    kind = catalog.by_kind(ref.api_version, ref.kind)
    if kind is None:
        raise ActionError(f"{ref.api_version}/{ref.kind} is not served")
    return kind


def _drained(pod: Object) -> bool:
    """Whether drain evicts the pod: not a DaemonSet's, not a mirror pod, not finished."""
    m = pod["metadata"]
    if any(o.get("kind") == "DaemonSet" for o in m.get("ownerReferences") or ()):
        return False
    if "kubernetes.io/config.mirror" in (m.get("annotations") or {}):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
