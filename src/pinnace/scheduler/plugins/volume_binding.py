"""VolumeBinding (pkg/scheduler/framework/plugins/volumebinding, v1.32): a pod's claims must be
bound, or bindable on the node.

- PreFilter: every claim the pod uses (a generic ephemeral volume's is `<pod>-<volume>`) must
  exist, not be Lost nor being deleted, and an ephemeral volume's must be the pod's
  (UnschedulableAndUnresolvable `persistentvolumeclaim "x" not found`, or "waiting for ephemeral
  volume controller to create the persistentvolumeclaim ..."); an unbound claim whose
  class binds at once is the PV controller's to bind, so the pod waits ("pod has unbound
  immediate PersistentVolumeClaims"). Pods without claims skip the plugin.
- Filter: the volumes of bound claims must allow the node by their node affinity; each claim
  waiting for its first consumer needs an Available volume it matches on the node, or a class
  that can provision there (a provisioner, and allowedTopologies the node meets).
- Reserve: the node's choice is remembered: which volumes the pod's waiting claims take (so
  other pods' cycles leave them), which claims are to be provisioned.
- PreBind: the chosen volumes get their claimRef, the claims to provision get the
  `volume.kubernetes.io/selected-node` annotation, then it waits (polling every second, up to
  bindTimeoutSeconds, 600) until the PV controller has bound every claim.

Score only runs under the StorageCapacityScoring/VolumeCapacityPriority gates, off in v1.32.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client
from pinnace.scheduler.events import ADD, NODE, UPDATE, ClusterEvent
from pinnace.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    Status,
    error,
    unresolvable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.volume_listers import (
    CLAIMS,
    CLASSES,
    CSI_NODES,
    VOLUMES,
    VolumeListers,
)
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.volumes import (
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    check_node_affinity,
    claim_class,
    claim_not_for_pod,
    find_matching_volume,
    requested_storage,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
BIND_TIMEOUT_SECONDS = 600
POLL_INTERVAL = 1.0

PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")
_STATE_KEY = "PreFilterVolumeBinding"
_BY_NODE_KEY = "VolumeBindingPodVolumesByNode"


def _missing_claim(name: str, ephemeral: bool) -> str:
    if ephemeral:  # normal just after the pod's creation
        return (
            f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
        )
    return f'persistentvolumeclaim "{name}" not found'


def _claim_problem(pod: Mapping[str, Any], claim: Mapping[str, Any], ephemeral: bool) -> str | None:
    """podHasPVCs on one claim that exists: why the pod cannot be scheduled with it at all."""
    name = claim["metadata"]["name"]
    if (claim.get("status") or {}).get("phase") == "Lost":
        volume = (claim.get("spec") or {}).get("volumeName") or ""
        return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return f'persistentvolumeclaim "{name}" is being deleted'
    return claim_not_for_pod(pod, claim) if ephemeral else None


@dataclass(frozen=True)
class _Claims:
    """The pod's claims as PreFilter found them."""

    bound: tuple[Mapping[str, Any], ...]
    waiting: tuple[Mapping[str, Any], ...]
    """Unbound claims of a WaitForFirstConsumer class, smallest request first."""


@dataclass
class _Decision:
    """What Reserve chose for a pod on its node, for PreBind to carry out."""

    node_name: str
    bindings: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    """(volume name, claim) pairs of static bindings."""
    provisions: list[Mapping[str, Any]] = field(default_factory=list)
    claims: list[tuple[str, str]] = field(default_factory=list)
    """Every claim of the pod, (namespace, name): PreBind waits for each to be bound."""


def is_delay_binding(listers: VolumeListers, claim: Mapping[str, Any]) -> bool:
    name = claim_class(claim)
    found = listers.storage_class(name) if name else None
    return found is not None and found.get("volumeBindingMode") == "WaitForFirstConsumer"


def matches_topology(storage_class: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms: no allowedTopologies allows every node."""
    terms = storage_class.get("allowedTopologies") or []
    if not terms:
        return True
    return any(
        all(
            labels.get(r.get("key")) in (r.get("values") or ())
            for r in t.get("matchLabelExpressions") or ()
        )
        for t in terms
    )


class VolumeBinding:
    name = "VolumeBinding"

    def __init__(self) -> None:
        self.volume_listers: VolumeListers | None = None
        self.api: Client | None = None
        """Set by the scheduler's API side: PreBind writes through it."""
        self._decisions: dict[str, _Decision] = {}
        self._assumed_volumes: dict[str, str] = {}
        """Volume name -> the pod key whose Reserve took it."""

    def _listers(self) -> VolumeListers:
        if self.volume_listers is None:
            self.volume_listers = VolumeListers()
        return self.volume_listers

    # --- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        claims = pod.claims
        listers = self.volume_listers
        if not claims or listers is None:
            return SKIP
        bound, waiting, immediate = [], [], []
        for name, ephemeral in claims:
            claim = listers.claim(pod.namespace, name)
            if claim is None:
                return unresolvable(_missing_claim(name, ephemeral))
            problem = _claim_problem(pod.pod, claim, ephemeral)
            if problem:
                return unresolvable(problem)
            if listers.claim_bound(pod.namespace, name):
                bound.append(claim)
            elif is_delay_binding(listers, claim):
                waiting.append(claim)
            else:
                immediate.append(claim)
        if immediate:
            return unresolvable(UNBOUND_IMMEDIATE)
        waiting.sort(key=requested_storage)
        state.write(_STATE_KEY, _Claims(tuple(bound), tuple(waiting)))
        return SUCCESS

    # --- Filter ------------------------------------------------------------------------------

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        if self._node_independent(state.read(_STATE_KEY)):
            return feasible  # bound claims whose volumes exist and fit every node
        result = feasible.copy()
        for i in np.flatnonzero(feasible).tolist():
            if self._reasons(state, pod, table.labels[i], table.names[i]):
                result[i] = False
        return result

    def _node_independent(self, claims: _Claims) -> bool:
        if claims.waiting:
            return False
        listers = self._listers()
        for claim in claims.bound:
            volume = listers.volume(str((claim.get("spec") or {}).get("volumeName")))
            if volume is None or (volume.get("spec") or {}).get("nodeAffinity"):
                return False
        return True

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        reasons = self._reasons(state, pod, table.labels[i], table.names[i])
        return unresolvable(*reasons) if reasons else SUCCESS

    def _reasons(
        self, state: CycleState, pod: PodInfo, labels: Mapping[str, str], node_name: str
    ) -> list[str]:
        claims: _Claims = state.read(_STATE_KEY)
        bindings, provisions, reasons = self._find(pod, claims, labels, node_name)
        if not reasons:
            state.data.setdefault(_BY_NODE_KEY, {})[node_name] = (bindings, provisions)
        return reasons

    def _find(
        self, pod: PodInfo, claims: _Claims, labels: Mapping[str, str], node_name: str
    ) -> tuple[list[tuple[str, Mapping[str, Any]]], list[Mapping[str, Any]], list[str]]:
        """FindPodVolumes on one node: the static bindings, the claims to provision, and
        the reasons the node does not do (none when it does)."""
        listers = self._listers()
        reasons = []
        found, affinity_ok = True, True
        for claim in claims.bound:
            volume = listers.volume(str((claim.get("spec") or {}).get("volumeName")))
            if volume is None:
                found = False
            elif not check_node_affinity(volume, labels, node_name):
                affinity_ok = False
        if not found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        if not affinity_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        bindings: list[tuple[str, Mapping[str, Any]]] = []
        provisions: list[Mapping[str, Any]] = []
        if claims.waiting:
            taken = {name for name, key in self._assumed_volumes.items() if key != pod.key}
            satisfied = True
            for claim in claims.waiting:
                candidates = [v for v in listers.volumes() if v["metadata"]["name"] not in taken]
                volume = find_matching_volume(claim, candidates, (labels, node_name), True)
                if volume is not None:
                    taken.add(volume["metadata"]["name"])
                    bindings.append((volume["metadata"]["name"], claim))
                    continue
                storage_class = listers.storage_class(claim_class(claim)) or {}
                provisioner = storage_class.get("provisioner")
                if (
                    not provisioner
                    or provisioner == NO_PROVISIONER
                    or not matches_topology(storage_class, labels)
                ):
                    satisfied = False
                else:
                    provisions.append(claim)
            if not satisfied:
                reasons.append(ERR_REASON_BIND_CONFLICT)
        return bindings, provisions, reasons

    # --- Reserve -----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        claims: _Claims | None = state.data.get(_STATE_KEY)
        if claims is None:
            return SUCCESS
        found = state.data.get(_BY_NODE_KEY, {}).get(node_name)
        if found is None and claims.waiting:
            return error(f"no volume bindings were found for node {node_name!r}")
        bindings, provisions = found or ([], [])
        every = [*claims.bound, *claims.waiting]
        decision = _Decision(
            node_name,
            bindings,
            provisions,
            [(pod.namespace, c["metadata"]["name"]) for c in every],
        )
        self._decisions[pod.key] = decision
        for name, _ in bindings:
            self._assumed_volumes[name] = pod.key
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._forget(pod.key)

    def _forget(self, pod_key: str) -> None:
        self._decisions.pop(pod_key, None)
        for name in [n for n, key in self._assumed_volumes.items() if key == pod_key]:
            del self._assumed_volumes[name]

    # --- PreBind -----------------------------------------------------------------------------

    async def pre_bind(self, pod: PodInfo, node_name: str) -> Status:
        decision = self._decisions.get(pod.key)
        if decision is None or self.api is None:
            return SUCCESS
        try:
            return await self._bind_pod_volumes(pod, decision)
        finally:
            self._forget(pod.key)

    async def _bind_pod_volumes(self, pod: PodInfo, decision: _Decision) -> Status:
        api = self.api
        assert api is not None
        listers = self._listers()
        try:
            for name, claim in decision.bindings:
                await api.modify(PVS, "", name, _binder(claim))
            for claim in decision.provisions:
                m = claim["metadata"]
                await api.modify(PVCS, m["namespace"], m["name"], _selector(decision.node_name))
        except StatusError as e:
            return error(f"binding volumes: {e.message}")
        waited = 0.0
        while not all(listers.claim_bound(ns, name) for ns, name in decision.claims):
            if waited >= BIND_TIMEOUT_SECONDS:
                return error("binding volumes: context deadline exceeded")
            await api.clock.sleep(POLL_INTERVAL)
            waited += POLL_INTERVAL
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent(CLAIMS, ADD),
            ClusterEvent(CLAIMS, UPDATE),
            ClusterEvent(VOLUMES, ADD),
            ClusterEvent(VOLUMES, UPDATE),
            ClusterEvent(CLASSES, ADD),
            ClusterEvent(CLASSES, UPDATE),
            ClusterEvent(CSI_NODES, ADD),
            ClusterEvent(CSI_NODES, UPDATE),
            ClusterEvent(NODE, ADD),
            ClusterEvent(NODE, UPDATE),
        ]


def _binder(claim: Mapping[str, Any]) -> Any:
    def bind(volume: Object) -> Object:
        m = claim["metadata"]
        volume["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": m["namespace"],
            "name": m["name"],
            "uid": m.get("uid"),
            "apiVersion": "v1",
            "resourceVersion": m.get("resourceVersion"),
        }
        volume["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        return volume

    return bind


def _selector(node_name: str) -> Any:
    def select(claim: Object) -> Object:
        claim["metadata"].setdefault("annotations", {})[SELECTED_NODE_ANNOTATION] = node_name
        return claim

    return select
