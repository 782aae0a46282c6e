"""The StatefulSet controller, as kube-controller-manager's (v1.32) pkg/controller/statefulset
(stateful_set.go, stateful_set_control.go, stateful_pod_control.go).

Each sync claims the pods named `<set>-<ordinal>` that the selector matches and the set's
ControllerRevisions, then:

- revisions: the current pod template gets a ControllerRevision (the update revision; an
  older revision with the same template is renumbered instead, which is how `kubectl rollout
  undo` rolls back), status.currentRevision names the one the pods run;
- replicas: the pod of every ordinal in [start, start+replicas) that is missing, failed or
  succeeded is (re)created, at the current revision below the partition and the update
  revision from it up. OrderedReady creates one pod at a time and waits for each to be
  Running, Ready and available for minReadySeconds before the next; Parallel creates them all;
- scale down: pods beyond the range go, highest ordinal first, one at a time (OrderedReady,
  once every remaining pod is healthy) or all at once (Parallel);
- RollingUpdate: the highest ordinal at or above the partition that does not run the update
  revision is deleted (it is recreated at the update revision), one at a time, waiting for
  each to be healthy again; OnDelete replaces pods only when someone deletes them;
- status: replicas, ready, available, current and updated counts, the two revisions,
  collisionCount and observedGeneration; once every pod runs the update revision and is ready,
  the update revision becomes the current one;
- history: revisions beyond revisionHistoryLimit that neither the status nor a pod uses go.

volumeClaimTemplates give each pod its claim volumes, and each claim (`<template>-<set>-<n>`)
is created before its pod, owned as persistentVolumeClaimRetentionPolicy says
(StatefulSetAutoDeletePVC, on in v1.32): by the set while whenDeleted is Delete, by a
scaled-down pod when whenScaled is Delete, so the garbage collector removes it with its owner.
MaxUnavailableStatefulSet is off, as in v1.32: a rolling update replaces one pod at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps.statefulset import EMPTY_STATUS, ON_DELETE, ROLLING_UPDATE
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory
from pinnace.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    Expectations,
    WorkQueue,
    pod_owner_to_sync,
    slow_start_batch,
    write_status,
)
from pinnace.controllers.history import (
    ControllerHistory,
    get_patch,
    hash_controller_revision,
    new_revision,
    revision_number,
    sort_revisions,
)
from pinnace.controllers.ownership import ControlledPodEvents, claim_pods
from pinnace.controllers.statefulset_util import (
    STATEFUL_SETS,
    allows_burst,
    apply_revision,
    claim_owner_up_to_date,
    identity_matches,
    in_ordinal_range,
    is_created,
    is_healthy,
    is_member_of,
    is_running_and_available,
    is_running_and_ready,
    is_terminating,
    new_claims,
    new_versioned_pod,
    ordinal,
    phase,
    pod_revision,
    replicas,
    retention_owner_references,
    start_ordinal,
    storage_matches,
    update_identity,
    update_storage,
)

CONTROLLER_NAME = "statefulset-controller"
STATUS_UPDATE_RETRIES = 5
"""retry.RetryOnConflict's DefaultRetry: five tries."""
PODS = catalog.kind("", "pods")
PVCS = catalog.kind("", "persistentvolumeclaims")
_COUNTERS = ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas")
_COMPARED = (*_COUNTERS, "currentRevision", "updateRevision")
"""What inconsistentStatus compares (with observedGeneration): collisionCount alone is not
worth a write."""
_OMITTED_WHEN_EMPTY = ("readyReplicas", "currentReplicas", "updatedReplicas")


@dataclass(frozen=True)
class _Revisions:
    """A sync's revisions: the one the pods run and the one they are moving to."""

    current: Object
    update: Object
    collision_count: int


class ClaimBeingDeleted(Exception):
    """A pod's claim is being deleted: its pod cannot be made until the claim is gone."""


class StatefulSetController(ControlledPodEvents):
    OWNER_KIND = "StatefulSet"

    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock)
        self.expectations = Expectations(self._clock)
        """Unused by this controller (it acts on what its informers show), kept for the
        shared pod handlers."""
        self._sets: Informer = informers.informer(STATEFUL_SETS)
        self._pods: Informer = informers.informer(PODS)
        self._claims: Informer = informers.informer(PVCS)
        self._history = ControllerHistory(client, informers, STATEFUL_SETS)
        self._sets.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._enqueue,
        )
        self._watch_pods(self._pods)

    @property
    def owners(self) -> Informer:
        return self._sets

    async def run(self) -> None:
        """Sync stateful sets forever; cancel the task to stop."""
        for informer in (self._sets, self._pods, self._claims, self._history.informer):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        found = pod_owner_to_sync(key, self._sets, self.expectations)
        if found is None:
            return
        sts, selector = found
        revisions = sort_revisions(await self._history.claim(sts))
        namespace = sts["metadata"]["namespace"]

        pods = await claim_pods(
            self._client,
            sts,
            STATEFUL_SETS,
            selector,
            (p for p in self._pods.list(namespace) if is_member_of(sts, p)),
        )
        status = await self._update_stateful_set(sts, pods, revisions)
        min_ready = sts["spec"].get("minReadySeconds") or 0
        if min_ready and status.get("availableReplicas", 0) != replicas(sts):
            self._queue.add_after(key, min_ready)

    async def _update_stateful_set(
        self, sts: Object, pods: list[Object], revisions: list[Object]
    ) -> Object:
        """UpdateStatefulSet: revisions, pods and status, then the history's trimming; an API
        error fails the sync (retried) once the status is written."""
        found = await self._revisions(sts, revisions)
        status, error = await _Update(self, sts, found, pods).run()
        await self._write_status(sts, status)
        await self._truncate_history(sts, pods, revisions, found)
        if error is not None:
            raise error
        return status

    # --- revisions ---------------------------------------------------------------------------

    async def _revisions(self, sts: Object, revisions: list[Object]) -> _Revisions:
        """getStatefulSetRevisions: the update revision (the last one if it holds the current
        template, an older equal one renumbered, or a new one), and the current revision the
        status names (the update revision when it names none)."""
        collision_count = (sts.get("status") or {}).get("collisionCount") or 0
        number = revision_number(revisions[-1]) + 1 if revisions else 1
        data = get_patch(sts)
        equal = [r for r in revisions if r.get("data") == data]
        if equal and equal[-1] is revisions[-1]:
            update = revisions[-1]
        elif equal:
            update = await self._history.renumber(equal[-1], number)
        else:
            update, collision_count = await self._create_revision(sts, number, collision_count)
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if r["metadata"]["name"] == current_name), update)
        return _Revisions(current, update, collision_count)

    async def _create_revision(
        self, sts: Object, number: int, collision_count: int
    ) -> tuple[Object, int]:
        """CreateControllerRevision: a name taken by another template is a hash collision,
        tried again with collisionCount one higher."""
        while True:
            hash_ = hash_controller_revision(get_patch(sts), collision_count)
            wanted = new_revision(sts, STATEFUL_SETS, number, hash_)
            try:
                return await self._history.create(wanted), collision_count
            except StatusError as e:
                if e.reason != "AlreadyExists":
                    raise
            existing = await self._history.get(
                sts["metadata"]["namespace"], wanted["metadata"]["name"]
            )
            if existing.get("data") == wanted["data"]:
                return existing, collision_count
            collision_count += 1

    async def _truncate_history(
        self, sts: Object, pods: list[Object], revisions: list[Object], found: _Revisions
    ) -> None:
        """truncateHistory: the oldest revisions beyond revisionHistoryLimit that neither
        revision of the status nor any pod uses."""
        live = {found.current["metadata"]["name"], found.update["metadata"]["name"]}
        live |= {pod_revision(p) for p in pods}
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = sts["spec"].get("revisionHistoryLimit")
        limit = 10 if limit is None else limit
        for revision in history[: max(0, len(history) - limit)]:
            await self._history.delete(revision)

    # --- status ------------------------------------------------------------------------------

    async def _write_status(self, sts: Object, status: Object) -> None:
        """updateStatefulSetStatus: complete a rolling update whose pods are all updated and
        ready, then write the status if it differs, retrying on conflicts."""
        strategy = (sts["spec"].get("updateStrategy") or {}).get("type")
        if (
            strategy == ROLLING_UPDATE
            and status["updatedReplicas"] == status["replicas"]
            and status["readyReplicas"] == status["replicas"]
        ):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        await write_status(
            self._client,
            STATEFUL_SETS,
            sts,
            lambda target: _serialized(status) if _inconsistent(target, status) else None,
            STATUS_UPDATE_RETRIES - 1,
        )

    # --- pods --------------------------------------------------------------------------------

    def now(self) -> float:
        return self._clock.now()

    def _pod_event(self, sts: Object, verb: str, pod: Object, error: Exception | None) -> None:
        """recordPodEvent: `create Pod web-0 in StatefulSet web successful`."""
        name, owner = pod["metadata"]["name"], sts["metadata"]["name"]
        reason = f"Successful{verb.capitalize()}" if error is None else f"Failed{verb.capitalize()}"
        message = f"{verb} Pod {name} in StatefulSet {owner} "
        if error is None:
            self._recorder.event(sts, EVENT_TYPE_NORMAL, reason, message + "successful")
        else:
            self._recorder.event(sts, EVENT_TYPE_WARNING, reason, f"{message}failed error: {error}")

    def _claim_event(
        self, sts: Object, pod: Object, claim: Object, error: Exception | None
    ) -> None:
        """recordClaimEvent: `create Claim www-web-0 Pod web-0 in StatefulSet web success`."""
        names = (claim["metadata"]["name"], pod["metadata"]["name"], sts["metadata"]["name"])
        if error is None:
            message = "create Claim {} Pod {} in StatefulSet {} success".format(*names)
            self._recorder.event(sts, EVENT_TYPE_NORMAL, "SuccessfulCreate", message)
        else:
            message = "create Claim {} for Pod {} in StatefulSet {} failed error: {}"
            message = message.format(*names, error)
            self._recorder.event(sts, EVENT_TYPE_WARNING, "FailedCreate", message)

    async def create_claims(self, sts: Object, pod: Object) -> None:
        """createPersistentVolumeClaims: the pod's claims that do not exist yet; one being
        deleted is an error, without an event of its own."""
        for claim in new_claims(sts, ordinal(pod)):
            m = claim["metadata"]
            found = self._claims.get(m["namespace"], m["name"])
            if found is not None:
                if found["metadata"].get("deletionTimestamp"):
                    raise ClaimBeingDeleted(f"pvc {m['name']} is being deleted")
                continue
            try:
                await self._client.create(PVCS, m["namespace"], claim)
            except StatusError as e:
                if e.reason == "AlreadyExists":
                    continue
                self._claim_event(sts, pod, claim, e)
                raise
            self._claim_event(sts, pod, claim, None)

    async def create_missing_claims(self, sts: Object, pod: Object) -> None:
        """createMissingPersistentVolumeClaims: a pending pod's claims made again (someone
        deleted them after the pod was made) and owned as the retention policy says."""
        await self.create_claims(sts, pod)
        await self.update_claim_retention(sts, pod)

    async def update_claim_retention(self, sts: Object, pod: Object) -> None:
        """UpdatePodClaimForRetentionPolicy: the pod's claims owned as the policy says."""
        for claim in new_claims(sts, ordinal(pod)):
            m = claim["metadata"]
            found = self._claims.get(m["namespace"], m["name"])
            if found is None:
                continue
            if claim_owner_up_to_date(sts, found, pod):
                continue
            refs = retention_owner_references(sts, found, pod)
            updated = clone(found)
            if refs:
                updated["metadata"]["ownerReferences"] = refs
            else:
                updated["metadata"].pop("ownerReferences", None)
            await self._client.update(PVCS, updated)

    def claims_match_retention(self, sts: Object, pod: Object) -> bool:
        for claim in new_claims(sts, ordinal(pod)):
            m = claim["metadata"]
            found = self._claims.get(m["namespace"], m["name"])
            if found is None:
                continue
            if not claim_owner_up_to_date(sts, found, pod):
                return False
        return True

    async def create_pod(self, sts: Object, pod: Object) -> None:
        """CreateStatefulPod: its claims first, then the pod, then the claims' owners."""
        try:
            await self.create_claims(sts, pod)
        except ClaimBeingDeleted as e:
            self._pod_event(sts, "create", pod, e)
            raise
        try:
            created = await self._client.create(PODS, sts["metadata"]["namespace"], pod)
        except StatusError as e:
            if e.reason != "AlreadyExists":
                self._pod_event(sts, "create", pod, e)
            raise
        await self.update_claim_retention(sts, created)
        self._pod_event(sts, "create", pod, None)

    async def delete_pod(self, sts: Object, pod: Object) -> None:
        try:
            await self._client.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        except StatusError as e:
            self._pod_event(sts, "delete", pod, e)
            raise
        self._pod_event(sts, "delete", pod, None)

    async def update_pod(self, sts: Object, pod: Object) -> None:
        """UpdateStatefulPod: restore the pod's identity and claim volumes, retrying on
        conflicts with the pod as the informer has it."""
        pod = clone(pod)
        while True:
            consistent = True
            if not identity_matches(sts, pod):
                update_identity(sts, pod)
                consistent = False
            if not storage_matches(sts, pod):
                update_storage(sts, pod)
                consistent = False
            if consistent:
                return
            try:
                await self._client.update(PODS, pod)
            except StatusError as e:
                if e.code != 409:
                    self._pod_event(sts, "update", pod, e)
                    raise
                fresh = self._pods.get(pod["metadata"]["namespace"], pod["metadata"]["name"])
                if fresh is None:
                    raise
                pod = clone(fresh)
                continue
            self._pod_event(sts, "update", pod, None)
            return


class _Update:
    """One pass of updateStatefulSet over a set's pods."""

    def __init__(
        self, control: StatefulSetController, sts: Object, found: _Revisions, pods: list[Object]
    ) -> None:
        self.c = control
        self.sts = sts
        self.found = found
        self.now = control.now()
        self.min_ready = sts["spec"].get("minReadySeconds") or 0
        self.monotonic = not allows_burst(sts)
        self.current_set = apply_revision(sts, found.current)
        self.update_set = apply_revision(sts, found.update)
        start = start_ordinal(sts)
        slots: list[Object | None] = [None] * max(0, replicas(sts))
        self.condemned: list[Object] = []
        for pod in pods:
            if in_ordinal_range(sts, pod):
                slots[ordinal(pod) - start] = pod
            elif ordinal(pod) >= 0:
                self.condemned.append(pod)
        self.replicas = [
            pod if pod is not None else self._new_pod(start + i) for i, pod in enumerate(slots)
        ]
        self.condemned.sort(key=ordinal, reverse=True)
        unhealthy = [p for p in self.replicas if not is_healthy(p)]
        unhealthy += [p for p in reversed(self.condemned) if not is_healthy(p)]
        self.first_unhealthy = unhealthy[0] if unhealthy else None

    def _new_pod(self, ordinal_: int) -> Object:
        return new_versioned_pod(
            self.current_set,
            self.update_set,
            self.found.current["metadata"]["name"],
            self.found.update["metadata"]["name"],
            ordinal_,
        )

    def status(self) -> Object:
        """The status of the pods as they are now (updateStatus over replicas and condemned)."""
        status: Object = {
            "observedGeneration": self.sts["metadata"].get("generation", 0),
            "currentRevision": self.found.current["metadata"]["name"],
            "updateRevision": self.found.update["metadata"]["name"],
            "collisionCount": self.found.collision_count,
            **dict.fromkeys(_COUNTERS, 0),
        }
        for pod in [*self.replicas, *self.condemned]:
            status["replicas"] += is_created(pod)
            if is_running_and_ready(pod):
                status["readyReplicas"] += 1
                status["availableReplicas"] += is_running_and_available(
                    pod, self.min_ready, self.now
                )
            if is_created(pod) and not is_terminating(pod):
                status["currentReplicas"] += pod_revision(pod) == status["currentRevision"]
                status["updatedReplicas"] += pod_revision(pod) == status["updateRevision"]
        return status

    async def run(self) -> tuple[Object, StatusError | ClaimBeingDeleted | None]:
        try:
            return await self._run(), None
        except (StatusError, ClaimBeingDeleted) as e:
            return self.status(), e

    async def _run(self) -> Object:
        if self.sts["metadata"].get("deletionTimestamp"):
            return self.status()
        if await _run_for_all(len(self.replicas), self._process_replica, self.monotonic):
            return self.status()
        if await _run_for_all(len(self.condemned), self._process_condemned, self.monotonic):
            return self.status()
        status = self.status()
        strategy = self.sts["spec"].get("updateStrategy") or {}
        if strategy.get("type") == ON_DELETE:
            return status
        partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
        update_name = self.found.update["metadata"]["name"]
        for target in range(len(self.replicas) - 1, partition - 1, -1):
            pod = self.replicas[target]
            if pod_revision(pod) != update_name and not is_terminating(pod):
                try:
                    await self.c.delete_pod(self.sts, pod)
                except StatusError as e:
                    if e.code != 404:
                        raise
                status["currentReplicas"] -= 1
                return status
            if not is_healthy(pod):
                return status
        return status

    async def _process_replica(self, i: int) -> bool:
        """processReplica: True when the pass must stop here."""
        pod = self.replicas[i]
        if phase(pod) in ("Failed", "Succeeded"):
            # v1.32 deletes a finished pod (once) and makes its successor only after it is
            # gone, with no event of its own (kubernetes#123809: the kubelet now gives every
            # pod it stops a final phase, which spammed Recreating* events on each rollout).
            if not pod["metadata"].get("deletionTimestamp"):
                await self.c.delete_pod(self.sts, pod)
            return True
        if not is_created(pod):
            await self.c.create_pod(self.sts, pod)
            if self.monotonic:
                return True
        if phase(pod) == "Pending":
            # Before the waits below: a pending pod whose claim is gone never gets ready.
            await self.c.create_missing_claims(self.sts, pod)
        if is_terminating(pod) and self.monotonic:
            return True
        if not is_running_and_ready(pod) and self.monotonic:
            return True
        if not is_running_and_available(pod, self.min_ready, self.now) and self.monotonic:
            return True
        if not self.c.claims_match_retention(self.sts, pod):
            await self.c.update_claim_retention(self.sts, pod)
        if identity_matches(self.sts, pod) and storage_matches(self.sts, pod):
            return False
        await self.c.update_pod(self.update_set, pod)
        return False

    async def _process_condemned(self, i: int) -> bool:
        """processCondemned: delete a pod beyond the range, or wait for it."""
        pod = self.condemned[i]
        if is_terminating(pod):
            return self.monotonic
        if self.monotonic and pod is not self.first_unhealthy:
            if not is_running_and_ready(pod):
                return True
            if not is_running_and_available(pod, self.min_ready, self.now):
                return True
        await self.c.update_claim_retention(self.sts, pod)
        await self.c.delete_pod(self.sts, pod)
        return True


async def _run_for_all(count: int, fn: Callable[[int], Awaitable[bool]], monotonic: bool) -> bool:
    """runForAll: in order, stopping where `fn` says (OrderedReady); or all of them in
    slow-start batches, stopping only on an error (Parallel). True when the pass stops."""
    if monotonic:
        for i in range(count):
            if await fn(i):
                return True
        return False
    indexes = iter(range(count))

    async def next_one() -> None:
        await fn(next(indexes))

    _, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, next_one)
    if error is not None:
        raise error
    return False


def _inconsistent(sts: Object, status: Object) -> bool:
    """inconsistentStatus: a newer generation observed, or a count or revision changed."""
    current = sts.get("status") or {}
    if status["observedGeneration"] > (current.get("observedGeneration") or 0):
        return True
    return any((current.get(k) or _zero(k)) != status[k] for k in _COMPARED)


def _zero(name: str) -> Any:
    return "" if name.endswith("Revision") else 0


def _serialized(status: Object) -> Object:
    """The status as apps/v1 serializes it: zero counters with omitempty left out."""
    result: Object = {**EMPTY_STATUS, **status}
    for name in (*_OMITTED_WHEN_EMPTY, "currentRevision", "updateRevision"):
        if not result.get(name):
            result.pop(name, None)
    return result
