"""The Deployment controller: rolls a Deployment's pod template out through ReplicaSets.

As kube-controller-manager's (v1.32): one ReplicaSet per pod template (`<deployment>-<hash>`,
labelled pod-template-hash), scaled up and the old ones down within maxSurge and
maxUnavailable (RollingUpdate) or all old ones first (Recreate); revisions in the
deployment.kubernetes.io/revision annotation (a rollback moves an old ReplicaSet to the
newest revision), proportional scaling while a rollout is under way, pause, old ReplicaSets
cleaned up past revisionHistoryLimit, and status with the Available and Progressing
conditions that `kubectl rollout status` reads.
"""

from __future__ import annotations

import logging

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.client.interest import in_namespaces, interest
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers import deployment_util as du
from pinnace.controllers.controller_utils import (
    WorkQueue,
    adopt_patch,
    controller_ref,
    owner_reference,
    release_patch,
    split_key,
)
from pinnace.controllers.ownership import claim, controlled_by
from pinnace.controllers.replicaset import PODS, REPLICA_SETS

log = logging.getLogger(__name__)

CONTROLLER_NAME = "deployment-controller"
MAX_RETRIES = 15
"""Failed syncs of a Deployment retried in a row before it is dropped until its next change."""
DEPLOYMENTS = catalog.kind("apps", "deployments")


class DeploymentController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock, max_retries=MAX_RETRIES)
        self._deployments: Informer = informers.informer(DEPLOYMENTS)
        self._replica_sets: Informer = informers.informer(REPLICA_SETS)
        self._pods: Informer = informers.informer(PODS)
        self._causes: dict[str, int] = {}
        """Per key, how many times an informer's event has queued it."""
        self._seen = 0
        """The key being synced's `_causes` count when its sync began."""
        self._quiet: dict[str, int] = {}
        """Keys whose last sync changed nothing and only queued a re-check that decides the
        same until an event queues the key (`_requeue_stuck`), with the count it saw."""
        self._deployments.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._enqueue,
        )
        self._replica_sets.add_event_handler(
            on_add=self._replica_set_changed,
            on_update=self._replica_set_updated,
            on_delete=self._replica_set_changed,
        )
        self._pods.add_event_handler(
            on_delete=self._pod_deleted,
            interest=interest(
                controlled_by("ReplicaSet"), in_namespaces(self._replica_sets.namespaces())
            ),
        )

    async def run(self) -> None:
        """Sync deployments forever; cancel the task to stop."""
        for informer in (self._deployments, self._replica_sets, self._pods):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    # --- event handlers ----------------------------------------------------------------------

    def _enqueue(self, deployment: Object) -> None:
        key = object_key(deployment)
        self._causes[key] = self._causes.get(key, 0) + 1
        self._queue.add(key)

    def _owner(self, obj: Object) -> Object | None:
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self._deployments.get(obj["metadata"]["namespace"], ref.get("name", ""))
        if d is None or d["metadata"]["uid"] != ref.get("uid"):
            return None
        return d

    def _replica_set_changed(self, rs: Object) -> None:
        owner = self._owner(rs)
        if owner is not None:
            self._enqueue(owner)
        elif controller_ref(rs) is None:
            labels = rs["metadata"].get("labels") or {}
            for d in self._deployments.list(rs["metadata"]["namespace"]):
                selector = as_label_selector(d["spec"].get("selector"))
                if selector is not None and not selector.empty and selector.matches(labels):
                    self._enqueue(d)

    def _replica_set_updated(self, old: Object, new: Object) -> None:
        if controller_ref(old) != controller_ref(new):
            self._replica_set_changed(old)
        self._replica_set_changed(new)

    def _pod_deleted(self, pod: Object) -> None:
        """Recreate waits for the old pods to be gone."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self._replica_sets.get(pod["metadata"]["namespace"], ref.get("name", ""))
        d = self._owner(rs) if rs is not None else None
        if d is not None and (d["spec"].get("strategy") or {}).get("type") == "Recreate":
            self._enqueue(d)

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cached = self._deployments.get(namespace, name)
        if cached is None:
            self._causes.pop(key, None)
            self._quiet.pop(key, None)
            return
        self._seen = self._causes.get(key, 0)
        if self._quiet.pop(key, None) == self._seen:
            # Nothing it reads has changed: the sync would decide the same again.
            self._quiet[key] = self._seen
            self._queue.add_rate_limited(key)
            return
        d = clone(cached)
        selector = as_label_selector(d["spec"].get("selector"))
        if selector is None:
            return
        if selector.empty:
            self._recorder.event(
                d,
                EVENT_TYPE_WARNING,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            status = d.setdefault("status", {})
            if status.get("observedGeneration", 0) < d["metadata"].get("generation", 0):
                status["observedGeneration"] = d["metadata"]["generation"]
                await self._client.update_status_own(DEPLOYMENTS, d)
            return
        sets = await self._claim(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            new, old = await self._new_and_old(d, sets, create=False)
            await self._sync_status(d, [*old, new], new)
            return
        d = await self._check_paused_conditions(d)
        if d["spec"].get("paused") or await self._is_scaling_event(d, sets):
            await self._scale_and_sync(d, sets)
        elif (d["spec"].get("strategy") or {}).get("type") == "Recreate":
            await self._rollout_recreate(d, sets)
        else:
            await self._rollout_rolling(d, sets)

    async def _claim(self, d: Object, selector: LabelSelector) -> list[Object]:
        """ClaimReplicaSets: the replica sets this deployment owns, adopting matching orphans
        and releasing owned ones that no longer match."""

        async def adopt(rs: Object) -> Object | None:
            adopted = await self._patch_replica_set(rs, adopt_patch(rs, d, DEPLOYMENTS))
            return rs if adopted else None

        return await claim(
            d,
            selector,
            self._replica_sets.list(d["metadata"]["namespace"]),
            adopt,
            lambda rs: self._patch_replica_set(rs, release_patch(rs, d)),
        )

    async def _patch_replica_set(self, rs: Object, patch: Object) -> bool:
        m = rs["metadata"]
        try:
            await self._client.patch(REPLICA_SETS, m["namespace"], m["name"], patch)
        except StatusError as e:
            if e.code in (404, 409, 422):
                return False
            raise
        return True

    # --- the new replica set -----------------------------------------------------------------

    async def _new_and_old(
        self, d: Object, sets: list[Object], *, create: bool
    ) -> tuple[Object | None, list[Object]]:
        """The replica set of the current template (made if `create`) and the others, with
        revisions brought up to date (getAllReplicaSetsAndSyncRevision)."""
        existing = du.find_new_replica_set(d, sets)
        old = [rs for rs in sets if rs is not existing]
        new_revision = max((du.revision(rs) for rs in old), default=0) + 1
        if existing is not None:
            return await self._update_new(d, existing, new_revision), old
        if not create:
            return None, old
        return await self._create_new(d, old, new_revision), old

    async def _update_new(self, d: Object, rs: Object, new_revision: int) -> Object:
        updated = clone(rs)
        annotated = du.set_new_replica_set_annotations(d, updated, new_revision, exists=True)
        min_ready = d["spec"].get("minReadySeconds") or 0
        if annotated or (updated["spec"].get("minReadySeconds") or 0) != min_ready:
            du.set_min_ready_seconds(updated, min_ready)
            rs = await self._client.update(REPLICA_SETS, updated)
        needs_update = self._set_revision(d, (rs["metadata"].get("annotations") or {}))
        status = d.setdefault("status", {})
        if du.has_progress_deadline(d) and du.condition(status, du.PROGRESSING) is None:
            message = f'Found new replica set "{rs["metadata"]["name"]}"'
            self._set(status, du.PROGRESSING, "True", "FoundNewReplicaSet", message)
            needs_update = True
        if needs_update:
            await self._write_status(d)
        return rs

    def _set_revision(self, d: Object, annotations: dict[str, str]) -> bool:
        wanted = annotations.get(du.REVISION, "")
        current = d["metadata"].setdefault("annotations", {})
        if current.get(du.REVISION) == wanted:
            return False
        current[du.REVISION] = wanted
        return True

    async def _create_new(self, d: Object, old: list[Object], new_revision: int) -> Object | None:
        namespace = d["metadata"]["namespace"]
        status = d.setdefault("status", {})
        template = clone(d["spec"].get("template") or {})
        pod_hash = du.compute_hash(template, status.get("collisionCount"))
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            du.POD_TEMPLATE_HASH: pod_hash,
        }
        template.setdefault("metadata", {})["labels"] = labels
        selector = clone(d["spec"]["selector"])
        selector.setdefault("matchLabels", {})[du.POD_TEMPLATE_HASH] = pod_hash
        name = f"{d['metadata']['name']}-{pod_hash}"
        rs: Object = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(labels),
                "ownerReferences": [owner_reference(d, DEPLOYMENTS)],
            },
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        du.set_min_ready_seconds(rs, d["spec"].get("minReadySeconds") or 0)
        count = du.new_rs_new_replicas(d, [*old, rs], rs)
        rs["spec"]["replicas"] = count
        du.set_new_replica_set_annotations(d, rs, new_revision, exists=False)
        already_exists = False
        try:
            created = await self._client.create(REPLICA_SETS, namespace, rs)
        except StatusError as e:
            if e.reason == "AlreadyExists":
                found = self._replica_sets.get(namespace, name)
                if found is None:
                    raise  # created by an earlier sync the cache has not shown yet: retried
                ref = controller_ref(found)
                if (
                    ref is not None
                    and ref.get("uid") == d["metadata"]["uid"]
                    and du.equal_ignore_hash(found["spec"]["template"], d["spec"]["template"])
                ):
                    created, already_exists = found, True
                else:
                    status["collisionCount"] = (status.get("collisionCount") or 0) + 1
                    await self._write_status(d)
                    raise
            else:
                message = f'Failed to create new replica set "{name}": {e}'
                if du.has_progress_deadline(d):
                    self._set(status, du.PROGRESSING, "False", "ReplicaSetCreateError", message)
                    await self._write_status(d)
                self._recorder.event(d, EVENT_TYPE_WARNING, "ReplicaSetCreateError", message)
                raise
        if not already_exists and count > 0:
            self._recorder.event(
                d,
                EVENT_TYPE_NORMAL,
                "ScalingReplicaSet",
                f"Scaled up replica set {name} from 0 to {count}",
            )
        needs_update = self._set_revision(d, {du.REVISION: str(new_revision)})
        if not already_exists and du.has_progress_deadline(d):
            message = f'Created new replica set "{name}"'
            self._set(status, du.PROGRESSING, "True", "NewReplicaSetCreated", message)
            needs_update = True
        if needs_update:
            await self._write_status(d)
        return created

    # --- strategies --------------------------------------------------------------------------

    async def _rollout_rolling(self, d: Object, sets: list[Object]) -> None:
        new, old = await self._new_and_old(d, sets, create=True)
        assert new is not None
        scaled, new = await self._reconcile_new(d, [*old, new], new)
        if not scaled:
            scaled, old = await self._reconcile_old(d, [*old, new], old, new)
        if not scaled and du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup(d, old)
        await self._sync_rollout_status(d, [*old, new], new)

    async def _reconcile_new(
        self, d: Object, all_sets: list[Object], new: Object
    ) -> tuple[bool, Object]:
        desired = du.replicas(d)
        if du.replicas(new) == desired:
            return False, new
        if du.replicas(new) > desired:
            return await self._scale_with_event(new, desired, d)
        return await self._scale_with_event(new, du.new_rs_new_replicas(d, all_sets, new), d)

    async def _reconcile_old(
        self, d: Object, all_sets: list[Object], old: list[Object], new: Object
    ) -> tuple[bool, list[Object]]:
        if du.total(old) == 0:
            return False, old
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new) - du.status_count(new, "availableReplicas")
        most = du.total(all_sets) - min_available - new_unavailable
        if most <= 0:
            return False, old
        old, cleaned = await self._cleanup_unhealthy(d, old, most)
        scaled_down, old = await self._scale_down_old_rolling(d, [*old, new], old)
        return cleaned + scaled_down > 0, old

    async def _cleanup_unhealthy(
        self, d: Object, old: list[Object], most: int
    ) -> tuple[list[Object], int]:
        """Scale down old replica sets' unavailable pods first: they serve nothing."""
        done = 0
        result: list[Object] = []
        for rs in sorted(old, key=du.created_key):
            available = du.status_count(rs, "availableReplicas")
            # status may lag a scale-down (more available than wanted): nothing to clean then
            if done < most and du.replicas(rs) > available:
                step = min(most - done, du.replicas(rs) - available)
                _, rs = await self._scale_with_event(rs, du.replicas(rs) - step, d)
                done += step
            result.append(rs)
        return result, done

    async def _scale_down_old_rolling(
        self, d: Object, all_sets: list[Object], old: list[Object]
    ) -> tuple[int, list[Object]]:
        min_available = du.replicas(d) - du.max_unavailable(d)
        available = du.total(all_sets, "availableReplicas")
        if available <= min_available:
            return 0, old
        budget = available - min_available
        done = 0
        result: list[Object] = []
        for rs in sorted(old, key=du.created_key):
            if done < budget and du.replicas(rs) != 0:
                step = min(du.replicas(rs), budget - done)
                _, rs = await self._scale_with_event(rs, du.replicas(rs) - step, d)
                done += step
            result.append(rs)
        return done, result

    async def _rollout_recreate(self, d: Object, sets: list[Object]) -> None:
        new, old = await self._new_and_old(d, sets, create=False)
        scaled = False
        for i, rs in enumerate(old):
            if du.replicas(rs) != 0:
                did, old[i] = await self._scale_with_event(rs, 0, d)
                scaled = scaled or did
        if scaled or self._old_pods_running(new, old):
            await self._sync_rollout_status(d, [*old, new], new)
            return
        if new is None:
            new, old = await self._new_and_old(d, sets, create=True)
        assert new is not None
        _, new = await self._scale_with_event(new, du.replicas(d), d)
        if du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup(d, old)
        await self._sync_rollout_status(d, [*old, new], new)

    def _old_pods_running(self, new: Object | None, old: list[Object]) -> bool:
        if du.total(old, "replicas") > 0:
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old}
        for pod in self._pods.list(new["metadata"]["namespace"] if new else ""):
            if (controller_ref(pod) or {}).get("uid") not in old_uids:
                continue
            if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
        return False

    # --- scaling -----------------------------------------------------------------------------

    async def _is_scaling_event(self, d: Object, sets: list[Object]) -> bool:
        new, old = await self._new_and_old(d, sets, create=False)
        for rs in [*old, new]:
            if rs is None or du.replicas(rs) == 0:
                continue
            desired = du.annotation_int(rs, du.DESIRED_REPLICAS)
            if desired is not None and desired != du.replicas(d):
                return True
        return False

    async def _scale_and_sync(self, d: Object, sets: list[Object]) -> None:
        """A paused deployment or a changed spec.replicas: resize, no rollout (sync)."""
        new, old = await self._new_and_old(d, sets, create=False)
        await self._scale(d, new, old)
        if d["spec"].get("paused"):
            await self._cleanup(d, old)
        await self._sync_status(d, [*old, new], new)

    async def _scale(self, d: Object, new: Object | None, old: list[Object]) -> None:
        desired = du.replicas(d)
        active = [rs for rs in [new, *old] if rs is not None and du.replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else new
            if target is None:
                target = max(old, key=du.created_key, default=None)
            if target is not None and du.replicas(target) != desired:
                await self._scale_with_event(target, desired, d)
            return
        if new is not None and _saturated(d, new):
            for rs in active:
                if rs is not new:
                    await self._scale_with_event(rs, 0, d)
            return
        if not du.is_rolling(d):
            return
        allowed = desired + du.max_surge(d) if desired > 0 else 0
        to_add = allowed - du.total(active)
        if to_add > 0:  # bigger first, then newer
            active.sort(key=lambda rs: (-du.replicas(rs), -du.created_key(rs)[0]))
        elif to_add < 0:  # bigger first, then older
            active.sort(key=lambda rs: (-du.replicas(rs), du.created_key(rs)[0]))
        added = 0
        sizes: list[int] = []
        for rs in active:
            share = _proportion(rs, d, to_add, added)
            sizes.append(du.replicas(rs) + share)
            added += share
        if to_add and added != to_add:
            sizes[0] = max(sizes[0] + to_add - added, 0)
        for rs, size in zip(active, sizes, strict=True):
            await self._scale_replica_set(rs, size, d, "up" if size > du.replicas(rs) else "down")

    async def _scale_with_event(self, rs: Object, size: int, d: Object) -> tuple[bool, Object]:
        if du.replicas(rs) == size:
            return False, rs
        operation = "up" if du.replicas(rs) < size else "down"
        return await self._scale_replica_set(rs, size, d, operation)

    async def _scale_replica_set(
        self, rs: Object, size: int, d: Object, operation: str
    ) -> tuple[bool, Object]:
        desired = du.replicas(d)
        most = desired + du.max_surge(d)
        resize = du.replicas(rs) != size
        if not resize and not du.replicas_annotations_need_update(rs, desired, most):
            return False, rs
        before = du.replicas(rs)
        updated = clone(rs)
        updated["spec"]["replicas"] = size
        du.set_replicas_annotations(updated, desired, most)
        result = await self._client.update(REPLICA_SETS, updated)
        if resize:
            name = rs["metadata"]["name"]
            self._recorder.event(
                d,
                EVENT_TYPE_NORMAL,
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {name} from {before} to {size}",
            )
        return resize, result

    # --- history -----------------------------------------------------------------------------

    async def _cleanup(self, d: Object, old: list[Object]) -> None:
        """Delete the oldest revisions past revisionHistoryLimit, once they are empty."""
        limit = d["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
        surplus = len(alive) - limit
        if surplus <= 0:
            return
        alive.sort(key=lambda rs: (du.revision(rs), du.created_key(rs)))
        for rs in alive[:surplus]:
            m = rs["metadata"]
            observed = (rs.get("status") or {}).get("observedGeneration", 0)
            if (
                du.status_count(rs, "replicas")
                or du.replicas(rs)
                or m.get("generation", 0) > observed
            ):
                continue
            try:
                await self._client.delete(REPLICA_SETS, m["namespace"], m["name"])
            except StatusError as e:
                if e.code != 404:
                    raise

    # --- status ------------------------------------------------------------------------------

    def _set(self, status: Object, kind: str, state: str, reason: str, message: str) -> None:
        now = self._clock.now_rfc3339()
        du.set_condition(status, du.new_condition(kind, state, reason, message, now))

    def _calculate_status(
        self, d: Object, all_sets: list[Object | None], new: Object | None
    ) -> Object:
        available = du.total(all_sets, "availableReplicas")
        old = d.get("status") or {}
        status: Object = {
            "observedGeneration": d["metadata"].get("generation", 0),
            "replicas": du.total(all_sets, "replicas"),
            "updatedReplicas": du.total([new], "replicas"),
            "readyReplicas": du.total(all_sets, "readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(du.total(all_sets) - available, 0),
        }
        # apps/v1 DeploymentStatus' counters are all omitempty: a zero is not written.
        status = {k: v for k, v in status.items() if v}
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        if old.get("conditions"):
            status["conditions"] = clone(old["conditions"])
        if available >= du.replicas(d) - du.max_unavailable(d):
            self._set(
                status,
                du.AVAILABLE,
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            self._set(
                status,
                du.AVAILABLE,
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        return status

    async def _sync_status(
        self, d: Object, all_sets: list[Object | None], new: Object | None
    ) -> None:
        status = self._calculate_status(d, all_sets, new)
        if status != (d.get("status") or {}):
            d["status"] = status
            await self._write_status(d)

    async def _sync_rollout_status(
        self, d: Object, all_sets: list[Object | None], new: Object | None
    ) -> None:
        status = self._calculate_status(d, all_sets, new)
        if not du.has_progress_deadline(d):
            du.remove_condition(status, du.PROGRESSING)
        current = du.condition(status, du.PROGRESSING)
        complete = (
            status.get("replicas", 0) == status.get("updatedReplicas", 0)
            and current is not None
            and current.get("reason") == "NewReplicaSetAvailable"
        )
        # Named by its new ReplicaSet, or by itself while it has none (Recreate's scale-down).
        subject = (
            f'ReplicaSet "{new["metadata"]["name"]}"'
            if new is not None
            else f'Deployment "{d["metadata"]["name"]}"'
        )
        if du.has_progress_deadline(d) and not complete:
            if du.deployment_complete(d, status):
                message = f"{subject} has successfully progressed."
                self._set(status, du.PROGRESSING, "True", "NewReplicaSetAvailable", message)
            elif du.deployment_progressing(d, status):
                message = f"{subject} is progressing."
                now = self._clock.now_rfc3339()
                cond = du.new_condition(du.PROGRESSING, "True", "ReplicaSetUpdated", message, now)
                if current is not None and current["status"] == "True":
                    cond["lastTransitionTime"] = current["lastTransitionTime"]
                du.remove_condition(status, du.PROGRESSING)
                du.set_condition(status, cond)
            elif du.deployment_timed_out(d, status, self._clock.now()):
                message = f"{subject} has timed out progressing."
                self._set(status, du.PROGRESSING, "False", "ProgressDeadlineExceeded", message)
        failure = _replica_failure([new, *all_sets])
        if failure is not None:
            du.set_condition(status, failure)
        else:
            du.remove_condition(status, du.REPLICA_FAILURE)
        if status == (d.get("status") or {}):
            self._requeue_stuck(d, status, timeless=complete)
            return
        d["status"] = status
        await self._write_status(d)

    def _requeue_stuck(self, d: Object, status: Object, *, timeless: bool) -> None:
        """Check again when the progress deadline passes. `timeless`: the sync that asks
        checked no deadline (the rollout completed once), so what it decided holds until an
        event queues the deployment."""
        current = du.condition(status, du.PROGRESSING)
        if not du.has_progress_deadline(d) or current is None:
            return
        if du.deployment_complete(d, status) or current.get("reason") == "ProgressDeadlineExceeded":
            return
        after = parse_time(current["lastUpdateTime"]) + d["spec"]["progressDeadlineSeconds"]
        after -= self._clock.now()
        if after < 1:
            # Due, or within the second: check again soon, but through the rate limiter. A
            # rollout that completed once and then lost pods never times out (v1.32 estimates
            # progress only while rolling out), so this can repeat as long as it lacks them.
            # Such a re-check is not run again until an event queues the deployment (its
            # pods, which Recreate reads, queue it only when deleted), but still goes through
            # the rate limiter, which all the queue's keys share.
            key = object_key(d)
            if timeless and (d["spec"].get("strategy") or {}).get("type") != "Recreate":
                self._quiet[key] = self._seen
            self._queue.add_rate_limited(key)
        else:
            self._queue.add_after(object_key(d), after + 1)  # a second for clock skew

    async def _write_status(self, d: Object) -> None:
        """Write status, and the revision annotation with it (a status write keeps the
        annotations it is given, as kube-apiserver's)."""
        written = await self._client.update_status_own(DEPLOYMENTS, d)
        d["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]

    async def _check_paused_conditions(self, d: Object) -> Object:
        if not du.has_progress_deadline(d):
            return d
        status = d.setdefault("status", {})
        current = du.condition(status, du.PROGRESSING)
        if current is not None and current.get("reason") == "ProgressDeadlineExceeded":
            return d
        paused_before = current is not None and current.get("reason") == "DeploymentPaused"
        paused = bool(d["spec"].get("paused"))
        if paused and not paused_before:
            self._set(status, du.PROGRESSING, "Unknown", "DeploymentPaused", "Deployment is paused")
        elif not paused and paused_before:
            self._set(
                status, du.PROGRESSING, "Unknown", "DeploymentResumed", "Deployment is resumed"
            )
        else:
            return d
        await self._write_status(d)
        return d


def _saturated(d: Object, rs: Object) -> bool:
    desired = du.replicas(d)
    return (
        du.replicas(rs) == desired
        and du.annotation_int(rs, du.DESIRED_REPLICAS) == desired
        and du.status_count(rs, "availableReplicas") == desired
    )


def _proportion(rs: Object, d: Object, to_add: int, added: int) -> int:
    if du.replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Object, d: Object) -> int:
    if du.replicas(d) == 0:
        return -du.replicas(rs)
    deployment_replicas = du.replicas(d) + du.max_surge(d)
    annotated = du.annotation_int(rs, du.MAX_REPLICAS)
    if annotated is None:
        annotated = (d.get("status") or {}).get("replicas") or 0
    if annotated == 0:
        return 0
    size = du.replicas(rs) * deployment_replicas / annotated
    return _round_half_away(size) - du.replicas(rs)


def _round_half_away(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def _replica_failure(sets: list[Object | None]) -> Object | None:
    for rs in sets:
        if rs is None:
            continue
        for c in (rs.get("status") or {}).get("conditions") or []:
            if c.get("type") == du.REPLICA_FAILURE and c.get("status") == "True":
                return {
                    "type": du.REPLICA_FAILURE,
                    "status": c["status"],
                    "lastUpdateTime": c.get("lastTransitionTime"),
                    "lastTransitionTime": c.get("lastTransitionTime"),
                    "reason": c.get("reason", ""),
                    "message": c.get("message", ""),
                }
    return None
