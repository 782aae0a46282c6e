"""The disruption controller: keeps each PodDisruptionBudget's status, which the eviction API
spends, as kube-controller-manager's (v1.32, pkg/controller/disruption).

For a budget it finds the pods its selector matches in its namespace (policy/v1: an empty
selector matches every pod there, an absent one none) and works out how many
are expected (the pods, or the scale of their controllers when the budget is a percentage or a
maxUnavailable), how many must stay healthy, how many are healthy (Ready, not being deleted, not
just evicted) and so how many disruptions are allowed. Pods the eviction API recorded in
status.disruptedPods are forgotten once they are gone or two minutes have passed. A budget that
cannot be worked out allows no disruption (DisruptionAllowed False, SyncFailed). Beside the
budgets, it clears pods' stale DisruptionTarget conditions (stale_pod_disruption).
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector, int_or_percent_value
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.client.interest import in_namespaces, interest
from pinnace.clock.rfc3339 import format_time, parse_time
from pinnace.controllers.controller_utils import WorkQueue, controller_ref, is_pod_ready, split_key
from pinnace.controllers.hpa import go_label_selector
from pinnace.controllers.stale_pod_disruption import StalePodDisruptions

log = logging.getLogger(__name__)

CONTROLLER_NAME = "controllermanager"
DELETION_TIMEOUT = 2 * 60.0
"""An evicted pod not deleted within this long counts again (DeletionTimeout)."""
DISRUPTION_ALLOWED = "DisruptionAllowed"


PODS = catalog.kind("", "pods")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
REPLICA_SETS = catalog.kind("apps", "replicasets")
DEPLOYMENTS = catalog.kind("apps", "deployments")


class SyncFailed(Exception):
    """The budget's expected pods cannot be worked out; its message goes on the condition."""


@dataclass(frozen=True)
class _Counts:
    expected: int
    desired_healthy: int
    unmanaged: list[str]


def scaled_value(value: Any, total: int) -> int:
    """An IntOrString as a count of `total`, percentages rounded up
    (GetScaledValueFromIntOrPercent with roundUp)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int_or_percent_value(value) * total / 100)
    return int_or_percent_value(value)


class DisruptionController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock)
        self._budgets: Informer = informers.informer(PDBS)
        self._pods: Informer = informers.informer(PODS)
        self._replica_sets: Informer = informers.informer(REPLICA_SETS)
        self._deployments: Informer = informers.informer(DEPLOYMENTS)
        # When each budget last changed, as the informer delivered it (see _pod_changed).
        self._changed: dict[str, int] = {}
        self._changes = itertools.count()
        self._budgets.add_event_handler(
            on_add=self._budget_changed,
            on_update=lambda old, new: self._budget_changed(new),
            on_delete=self._budget_deleted,
        )
        self._pods.add_event_handler(
            on_add=self._pod_changed,
            on_update=lambda old, new: self._pod_changed(new),
            on_delete=self._pod_changed,
            interest=interest(in_namespaces(self._budgets.namespaces())),  # its budgets'
        )
        self._stale = StalePodDisruptions(client, self._pods)

    async def run(self) -> None:
        """Sync budgets forever; cancel the task to stop."""
        for informer in (self._budgets, self._pods, self._replica_sets, self._deployments):
            await informer.wait_for_sync()
        stale = self._clock.loop.create_task(self._stale.run())
        try:
            await self._queue.run(self.sync)
        finally:
            stale.cancel()

    def _enqueue(self, budget: Object) -> None:
        self._queue.add(object_key(budget))

    def _budget_changed(self, budget: Object) -> None:
        self._changed[object_key(budget)] = next(self._changes)
        self._enqueue(budget)

    def _budget_deleted(self, budget: Object) -> None:
        self._changed.pop(object_key(budget), None)
        self._enqueue(budget)

    def _pod_changed(self, pod: Object) -> None:
        """Sync the pod's budget; of several, only one (getPdbForPod), so the others' status
        follows the pod only when they are synced for another reason. v1.32 takes the first its
        lister returns, in Go's random map order; here the one changed longest ago, so that as
        the pod changes each budget has its turn, deterministically."""
        budgets = sorted(self._budgets_for(pod), key=lambda b: self._changed.get(object_key(b), -1))
        if len(budgets) > 1:
            m = pod["metadata"]
            self._recorder.event(
                pod,
                EVENT_TYPE_WARNING,
                "MultiplePodDisruptionBudgets",
                f'Pod "{m["namespace"]}"/"{m["name"]}" matches multiple PodDisruptionBudgets.  '
                f'Chose "{budgets[0]["metadata"]["name"]}" arbitrarily.',
            )
        if budgets:
            self._enqueue(budgets[0])

    def _budgets_for(self, pod: Object) -> list[Object]:
        labels = pod["metadata"].get("labels") or {}
        found = []
        for budget in self._budgets.list(pod["metadata"]["namespace"]):
            selector = as_label_selector((budget.get("spec") or {}).get("selector"))
            if selector is not None and selector.matches(labels):
                found.append(budget)
        return found

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        budget = self._budgets.get(namespace, name)
        if budget is None:
            return
        try:
            await self._try_sync(budget)
        except StatusError as e:
            if e.code == 409:
                raise  # retried without giving up on the budget
            await self._fail_safe(budget, e.message)
            raise
        except SyncFailed as e:
            await self._fail_safe(budget, str(e))
            raise

    async def _try_sync(self, budget: Object) -> None:
        pods = self._pods_for(budget)
        if not pods:
            self._recorder.event(budget, EVENT_TYPE_NORMAL, "NoPods", "No matching pods found")
        try:
            counts = await self._expected_counts(budget, pods)
        except SyncFailed as e:
            self._recorder.event(
                budget,
                EVENT_TYPE_WARNING,
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {e}",
            )
            raise
        if counts.unmanaged:
            self._recorder.event(
                budget,
                EVENT_TYPE_WARNING,
                "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: "
                f"{go_label_selector((budget.get('spec') or {}).get('selector'))}) were found "
                "to be unmanaged. As a result, the status of the PDB cannot be calculated "
                "correctly, which may result in undefined behavior. To account for these pods "
                'please set ".spec.minAvailable" field of the PDB to an integer value.',
            )
        now = self._clock.now()
        disrupted, recheck = self._disrupted_pods(budget, pods, now)
        healthy = sum(
            1
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and p["metadata"]["name"] not in disrupted
            and is_pod_ready(p)
        )
        await self._update_status(budget, healthy, counts, disrupted)
        if recheck is not None:
            self._queue.add_after(object_key(budget), recheck - now)

    def _pods_for(self, budget: Object) -> list[Object]:
        selector = as_label_selector((budget.get("spec") or {}).get("selector"))
        if selector is None:
            return []
        return self._pods.list(budget["metadata"]["namespace"], selector)

    async def _expected_counts(self, budget: Object, pods: list[Object]) -> _Counts:
        spec = budget.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = await self._expected_scale(pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected), 0)
            return _Counts(expected, desired, unmanaged)
        min_available = spec.get("minAvailable")
        if isinstance(min_available, str):
            expected, unmanaged = await self._expected_scale(pods)
            return _Counts(expected, scaled_value(min_available, expected), unmanaged)
        if min_available is not None:
            return _Counts(len(pods), int(min_available), [])
        return _Counts(0, 0, [])

    async def _expected_scale(self, pods: list[Object]) -> tuple[int, list[str]]:
        """The sum of the scales of the pods' controllers, and the pods without one."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = await self._controller_scale(ref, pod["metadata"]["namespace"])
            if found is None:
                raise SyncFailed(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            uid, replicas = found
            scales[uid] = replicas
        return sum(scales.values()), unmanaged

    async def _controller_scale(self, ref: Object, namespace: str) -> tuple[str, int] | None:
        """(uid, replicas) of the controller `ref` names, as the finders try it: a replica
        set's Deployment, a replica set no Deployment controls (whatever else may), then any
        kind with a scale subresource."""
        if ref.get("kind") == "ReplicaSet" and _group(ref) in ("apps", "extensions"):
            rs = self._replica_sets.get(namespace, ref.get("name", ""))
            if rs is not None and rs["metadata"]["uid"] == ref.get("uid"):
                owner = controller_ref(rs)
                if owner is None or owner.get("kind") != "Deployment":
                    return rs["metadata"]["uid"], rs["spec"].get("replicas", 1)
                deployment = self._deployments.get(namespace, owner.get("name", ""))
                if (
                    _group(owner) in ("apps", "extensions")
                    and deployment is not None
                    and deployment["metadata"]["uid"] == owner.get("uid")
                ):
                    return deployment["metadata"]["uid"], deployment["spec"].get("replicas", 1)
        return await self._scale_of(ref, namespace)

    async def _scale_of(self, ref: Object, namespace: str) -> tuple[str, int] | None:
        api_version, kind_name = ref.get("apiVersion", ""), ref.get("kind", "")
        kind = catalog.by_kind(api_version, kind_name)
        if kind is None:
            raise SyncFailed(f'no matches for kind "{kind_name}" in version "{api_version}"')
        if "scale" not in kind.subresources:
            return None
        try:
            scale = await self._client.get_scale(kind, namespace, ref.get("name", ""))
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        if scale["metadata"].get("uid") != ref.get("uid"):
            return None
        return scale["metadata"]["uid"], (scale.get("spec") or {}).get("replicas", 0)

    def _disrupted_pods(
        self, budget: Object, pods: list[Object], now: float
    ) -> tuple[dict[str, str], float | None]:
        """The disruptedPods entries still awaited, and when the first of them expires."""
        recorded = (budget.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: float | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in recorded:
                continue
            expires = parse_time(recorded[name]) + DELETION_TIMEOUT
            if expires <= now:
                # v1.32 names the budget's namespace twice (namespace/namespace), not its name.
                namespace = budget["metadata"]["namespace"]
                self._recorder.event(
                    pod,
                    EVENT_TYPE_WARNING,
                    "NotDeleted",
                    f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't",
                )
                continue
            kept[name] = recorded[name]
            recheck = expires if recheck is None else min(recheck, expires)
        return kept, recheck

    # --- status ------------------------------------------------------------------------------

    async def _update_status(
        self, budget: Object, healthy: int, counts: _Counts, disrupted: dict[str, str]
    ) -> None:
        allowed = healthy - counts.desired_healthy
        if counts.expected <= 0 or allowed <= 0:
            allowed = 0
        old = budget.get("status") or {}
        status: dict[str, Any] = {
            "currentHealthy": healthy,
            "desiredHealthy": counts.desired_healthy,
            "expectedPods": counts.expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": budget["metadata"].get("generation", 0),
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        status["conditions"] = [clone(c) for c in old.get("conditions") or []]
        if allowed > 0:
            _set_condition(status, "True", "SufficientPods", "", self._clock.now())
        else:
            _set_condition(status, "False", "InsufficientPods", "", self._clock.now())
        if status != old:
            await self._write_status(budget, status)

    async def _fail_safe(self, budget: Object, message: str) -> None:
        """Allow no disruption while the budget cannot be worked out."""
        status = clone(budget.get("status") or {})
        status["disruptionsAllowed"] = 0
        status.setdefault("conditions", [])
        _set_condition(status, "False", "SyncFailed", message, self._clock.now())
        if status != (budget.get("status") or {}):
            await self._write_status(budget, status)

    async def _write_status(self, budget: Object, status: Object) -> None:
        updated = clone(budget)
        updated["status"] = status
        try:
            await self._client.update_status(PDBS, updated)
        except StatusError as e:
            if e.code != 404:
                raise


def _group(ref: Object) -> str:
    api_version = ref.get("apiVersion", "")
    return api_version.split("/")[0] if "/" in api_version else ""


def _set_condition(status: Object, state: str, reason: str, message: str, now: float) -> None:
    """meta.SetStatusCondition for DisruptionAllowed: the transition time moves only when the
    status does."""
    conditions: list[Object] = status["conditions"]
    current = next((c for c in conditions if c.get("type") == DISRUPTION_ALLOWED), None)
    if current is None:
        current = {"type": DISRUPTION_ALLOWED, "lastTransitionTime": format_time(now)}
        conditions.append(current)
    elif current.get("status") != state:
        current["lastTransitionTime"] = format_time(now)
    current["status"] = state
    current["reason"] = reason
    current["message"] = message
    current["observedGeneration"] = status.get("observedGeneration", 0)
