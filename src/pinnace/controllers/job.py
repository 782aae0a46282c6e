"""The Job controller: runs a Job's pods to completion, as kube-controller-manager's (v1.32).

It keeps min(parallelism, remaining completions) pods active (for an Indexed Job, one per
pending completion index), replaces failed pods after a back-off (10 s doubling up to 10 min
from the latest failure), and fails the Job once more pods failed than backoffLimit (for
restartPolicy OnFailure: once its pods' containers restarted that often) or once it ran
longer than activeDeadlineSeconds, deleting its active pods. A suspended Job has no pods.
spec.podFailurePolicy, backoffLimitPerIndex with maxFailedIndexes, and successPolicy act as
in v1.32 (`job_failure_policy`, `job_index_failures`, `job_success_policy`).

Pods are counted with the `batch.kubernetes.io/job-tracking` finalizer: the controller first
records a finished pod's uid in status.uncountedTerminatedPods, then removes the finalizer,
then moves the uid to status.succeeded or status.failed, so that no pod is counted twice or
lost, whatever restarts in between. The terminal condition comes in two steps, as in v1.32:
SuccessCriteriaMet (or FailureTarget) first, Complete (or Failed) once no pod of the Job is
terminating any more.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.batch.job_status import is_finished
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.client.interest import Fact, in_namespaces, interest
from pinnace.clock import Clock
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    Expectations,
    RateLimiter,
    WorkQueue,
    active_pods_to_delete,
    adopt_patch,
    controller_ref,
    is_pod_active,
    is_pod_ready,
    namespace_terminating,
    pod_from_template,
    slow_start_batch,
    split_key,
)
from pinnace.controllers.job_backoff import BackoffRecord
from pinnace.controllers.job_conditions import (
    COMPLETE,
    FAILED,
    FAILURE_TARGET,
    SUCCESS_CRITERIA_MET,
    SUSPENDED,
    condition,
    ensure_condition,
    new_condition,
)
from pinnace.controllers.job_failure_policy import judge
from pinnace.controllers.job_index_failures import (
    failed_indexes,
    has_backoff_limit_per_index,
    index_backoff,
    pods_with_delayed_deletion,
    replacement_annotations,
)
from pinnace.controllers.job_indexes import (
    UNKNOWN_INDEX,
    Intervals,
    add_completion_index_env,
    completion_index,
    first_pending_indexes,
    indexed_generate_name,
    indexes_of,
    surplus_index_pods,
    with_completion_index,
)
from pinnace.controllers.job_pods import (
    TRACKING_FINALIZER,
    has_tracking_finalizer,
    is_indexed,
    is_pod_failed,
    is_suspended,
    is_terminating,
    only_replace_failed,
    past_backoff_limit_on_failure,
    phase,
    release_patch,
    remove_finalizer_patch,
)
from pinnace.controllers.job_success_policy import matched_rule_message
from pinnace.controllers.job_tracking import FinalizerExpectations, count_uncounted, set_omitempty
from pinnace.controllers.ownership import (
    CONTROLLER_UID_INDEX,
    claim,
    claim_candidates,
    controlled_by,
    index_pods_by_controller,
    resolve_controller_ref,
    selecting_owners,
)

CONTROLLER_NAME = "job-controller"
MANAGED_BY_DEFAULT = "kubernetes.io/job-controller"
SYNC_BATCH_PERIOD = 1.0
API_BACKOFF = 1.0
MAX_API_BACKOFF = 60.0
"""A failed sync is retried after 1 s, doubling up to a minute (DefaultJobApiBackOff)."""
"""Pod events and status-only Job changes are gathered for this long before a sync."""
MAX_UNCOUNTED_PODS = 500
MAX_POD_CREATE_DELETE_PER_SYNC = 500


PODS = catalog.kind("", "pods")
JOBS = catalog.kind("batch", "jobs")


@dataclass
class _Sync:
    """What one sync of one Job knows (syncJobCtx)."""

    job: Object
    pods: list[Object]
    active_pods: list[Object]
    ready: int
    terminating: int
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_rm: set[str]
    succeeded: int = 0
    failed: int = 0
    finished: Object | None = None
    """The condition the Job is to get (SuccessCriteriaMet, FailureTarget, Complete,
    Failed), if it is done."""
    prev_succeeded_indexes: Intervals = field(default_factory=Intervals)
    succeeded_indexes: Intervals = field(default_factory=Intervals)
    failed_indexes: Intervals | None = None
    """With backoffLimitPerIndex: the indexes failed for good."""
    delayed: dict[int, Object] = field(default_factory=dict)
    """With backoffLimitPerIndex: per index to retry, the failed pod the next one replaces."""
    backoff: BackoffRecord = field(default_factory=BackoffRecord)

    @property
    def status(self) -> Any:
        return self.job["status"]

    def counted(self, pod: Object) -> bool:
        """Already counted in status, or its finalizer is on its way out."""
        return not has_tracking_finalizer(pod) or pod["metadata"]["uid"] in self.expected_rm

    def newly_finished(self) -> tuple[list[Object], list[Object]]:
        """The pods that succeeded and failed and are not yet counted at all."""
        fresh = [p for p in self.pods if not self.counted(p) and self.valid_index(p)]
        succeeded = [
            p
            for p in fresh
            if phase(p) == "Succeeded" and p["metadata"]["uid"] not in self.uncounted_succeeded
        ]
        failed = [
            p
            for p in fresh
            if is_pod_failed(p, self.job) and p["metadata"]["uid"] not in self.uncounted_failed
        ]
        return succeeded, failed

    def failure_to_count(self, pod: Object) -> bool:
        """A failure not yet recorded as uncounted that counts toward backoffLimit."""
        return (
            pod["metadata"]["uid"] not in self.uncounted_failed
            and self.valid_index(pod)
            and judge(self.job["spec"].get("podFailurePolicy"), pod).counts
        )

    def finalizer_removable(self, pod: Object, failed: bool) -> bool:
        """The Job is going or done, or the pod succeeded, or it failed and is not kept for
        its replacement to take over its index's failure counts (canRemoveFinalizer)."""
        if self.job["metadata"].get("deletionTimestamp") or self.finished is not None:
            return True
        if phase(pod) == "Succeeded":
            return True
        kept = self.delayed.get(completion_index(pod))
        return failed and (kept is None or kept["metadata"]["uid"] != pod["metadata"]["uid"])

    def valid_index(self, pod: Object) -> bool:
        if not is_indexed(self.job):
            return True
        ix = completion_index(pod)
        return ix != UNKNOWN_INDEX and ix < self.job["spec"]["completions"]


class JobController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock, _api_backoff(self._clock))
        self._orphans = WorkQueue(self._clock, _api_backoff(self._clock))
        self.expectations = Expectations(self._clock)
        self.finalizer_expectations = FinalizerExpectations()
        self._backoff: dict[str, BackoffRecord] = {}
        self._jobs: Informer = informers.informer(JOBS)
        self._pods: Informer = informers.informer(PODS)
        index_pods_by_controller(self._pods)
        self._jobs.add_event_handler(
            on_add=self._enqueue, on_update=self._job_updated, on_delete=self._job_deleted
        )
        # A pod concerns a Job of its namespace, controlling it or free to adopt it; and its
        # tracking finalizer, whatever controls it, this controller's orphan-pod queue.
        tracked = Fact(has_tracking_finalizer)
        self._pods.add_event_handler(
            on_add=self._pod_added,
            on_update=self._pod_updated,
            on_delete=lambda pod: self._pod_deleted(pod, final=True),
            interest=interest(
                (in_namespaces(self._jobs.namespaces()), tracked),
                (controlled_by("Job", orphans=True), tracked),
            ),
        )

    async def run(self) -> None:
        """Sync jobs and clean orphan pods' finalizers forever; cancel the task to stop."""
        await self._jobs.wait_for_sync()
        await self._pods.wait_for_sync()
        orphans = self._clock.loop.create_task(self._orphans.run(self._sync_orphan_pod))
        try:
            await self._queue.run(self.sync)
        finally:
            orphans.cancel()

    # --- event handlers ----------------------------------------------------------------------

    def _enqueue(self, job: Object, delay: float = 0.0) -> None:
        self._queue.add_after(object_key(job), delay)

    def _enqueue_batched(self, job: Object) -> None:
        self._enqueue(job, SYNC_BATCH_PERIOD)

    def _job_updated(self, old: Object, new: Object) -> None:
        if new["metadata"].get("generation") == old["metadata"].get("generation"):
            self._enqueue_batched(new)
        else:
            self._enqueue(new)
        if is_finished(new.get("status") or {}):
            self._cleanup_pod_finalizers(new)
        started = (new.get("status") or {}).get("startTime")
        deadline = new["spec"].get("activeDeadlineSeconds")
        if (
            started
            and deadline is not None
            and deadline != old["spec"].get("activeDeadlineSeconds")
        ):
            self._enqueue(new, deadline - (self._clock.now() - parse_time(started)))

    def _job_deleted(self, job: Object) -> None:
        self._enqueue(job)
        self._cleanup_pod_finalizers(job)

    def _cleanup_pod_finalizers(self, job: Object) -> None:
        """Pods of a finished or deleted Job keep no tracking finalizer."""
        for pod in self._pods.by_index(CONTROLLER_UID_INDEX, job["metadata"]["uid"]):
            if has_tracking_finalizer(pod):
                self._orphans.add(object_key(pod))

    def _owner(self, pod: Object, ref: Object | None = None) -> Object | None:
        return resolve_controller_ref(pod, "Job", self._jobs, ref)

    def _enqueue_matching(self, pod: Object) -> None:
        """An orphan changed: the Jobs that select it have a look."""
        for owner in selecting_owners(pod, self._jobs):
            self._enqueue_batched(owner)

    def _pod_added(self, pod: Object) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod, final=False)
            return
        if controller_ref(pod) is not None:
            job = self._owner(pod)
            if job is not None:
                self.expectations.creation_observed(object_key(job))
                self._enqueue_batched(job)
            return
        if has_tracking_finalizer(pod):
            self._orphans.add(object_key(pod))
        self._enqueue_matching(pod)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new, final=False)
            return
        removed = not has_tracking_finalizer(new)
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            old_job = self._owner(old, old_ref)
            if old_job is not None:
                if removed:
                    self.finalizer_expectations.observed(
                        object_key(old_job), new["metadata"]["uid"]
                    )
                self._enqueue_batched(old_job)
        if new_ref is not None:
            job = self._owner(new, new_ref)
            if job is not None:
                if removed:
                    self.finalizer_expectations.observed(object_key(job), new["metadata"]["uid"])
                self._enqueue_batched(job)
            return
        if has_tracking_finalizer(new):
            self._orphans.add(object_key(new))
        if old["metadata"].get("labels") != new["metadata"].get("labels") or old_ref != new_ref:
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: Object, final: bool) -> None:
        finalizer = has_tracking_finalizer(pod)
        job = self._owner(pod)
        if job is None or is_finished(job.get("status") or {}):
            if finalizer:
                self._orphans.add(object_key(pod))
            return
        key = object_key(job)
        self.expectations.deletion_observed(key, object_key(pod))
        if final or not finalizer:
            self.finalizer_expectations.observed(key, pod["metadata"]["uid"])
        self._enqueue_batched(job)

    # --- orphan pods -------------------------------------------------------------------------

    async def _sync_orphan_pod(self, key: str) -> None:
        """Remove the tracking finalizer of a pod no running Job of this controller owns."""
        namespace, name = split_key(key)
        pod = self._pods.get(namespace, name)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = controller_ref(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != JOBS.api_version:
                return
            job = self._owner(pod, ref)
            if job is not None and _managed_elsewhere(job):
                return
            if job is not None and not is_finished(job.get("status") or {}):
                return
        await self._patch_pod(pod, remove_finalizer_patch())

    async def _patch_pod(self, pod: Object, patch: Object) -> bool:
        try:
            await self._client.patch(
                PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], patch
            )
        except StatusError as e:
            if e.code == 404:
                return False
            raise
        return True

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cached = self._jobs.get(namespace, name)
        if cached is None:
            self.expectations.forget(key)
            self.finalizer_expectations.forget(key)
            self._backoff.pop(key, None)
            return
        if _managed_elsewhere(cached):
            return
        if is_finished(cached.get("status") or {}):
            self._backoff.pop(key, None)
            return
        # The sync changes the status only (a write replaces the metadata): the spec stays
        # the cached Job's, which the status write's defaulting finds complete.
        job = {**cached, "status": clone(cached.get("status") or {})}
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        satisfied = self.expectations.satisfied(key)
        pods = await self._claim(job)
        active_pods = [p for p in pods if is_pod_active(p)]
        ctx = _Sync(
            job=job,
            pods=pods,
            active_pods=active_pods,
            ready=sum(is_pod_ready(p) for p in active_pods),
            terminating=sum(is_terminating(p) for p in pods),
            uncounted_succeeded=set(uncounted.get("succeeded") or []),
            uncounted_failed=set(uncounted.get("failed") or []),
            expected_rm=self.finalizer_expectations.expected(key),
        )
        active = len(active_pods)
        new_succeeded, new_failed = ctx.newly_finished()
        policy = job["spec"].get("podFailurePolicy")
        counted_failures = sum(judge(policy, p).counts for p in new_failed)
        uncounted_total = len(ctx.uncounted_succeeded)
        ctx.succeeded = status.get("succeeded", 0) + len(new_succeeded) + uncounted_total
        ctx.failed = status.get("failed", 0) + counted_failures + len(ctx.uncounted_failed)
        if not status.get("startTime") and not is_suspended(job):
            status["startTime"] = self._clock.now_rfc3339()
        ctx.backoff = self._backoff.get(key, BackoffRecord()).after(new_succeeded, new_failed)
        self._decide_failure(ctx, key)
        if is_indexed(job):
            self._count_indexes(ctx)
        suspend_changed = False
        error: StatusError | None = None
        if ctx.finished is not None:
            deleted_ready, deleted, error = await self._delete_active_pods(job, active_pods)
            if deleted != active or not satisfied:
                ctx.finished = None  # wait for the deletions and for pods not yet seen
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
        else:
            managed = False
            if satisfied and not job["metadata"].get("deletionTimestamp"):
                active, error = await self._manage(ctx, key)
                managed = True
            completions = job["spec"].get("completions")
            if completions is None:
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= completions and active == 0
            if complete:
                ctx.finished = new_condition(
                    SUCCESS_CRITERIA_MET,
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    self._clock.now_rfc3339(),
                )
            elif managed:
                suspend_changed = self._update_suspended(job)
        needs_update = (
            suspend_changed
            or active != status.get("active", 0)
            or ctx.ready != status.get("ready")
            or ctx.terminating != status.get("terminating")
        )
        set_omitempty(status, "active", active)
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        await self._track_status(ctx, key, needs_update)
        if error is not None:
            raise error  # retried with backoff

    def _count_indexes(self, ctx: _Sync) -> None:
        """An Indexed Job: its succeeded indexes (the count that matters), the failed ones
        under backoffLimitPerIndex, and whether a success policy rule is met."""
        job = ctx.job
        completions = job["spec"]["completions"]
        ctx.prev_succeeded_indexes = Intervals.parse(
            ctx.status.get("completedIndexes", ""), completions
        )
        ctx.succeeded_indexes = ctx.prev_succeeded_indexes.with_indexes(
            completion_index(p)
            for p in ctx.pods
            if phase(p) == "Succeeded" and has_tracking_finalizer(p) and ctx.valid_index(p)
        )
        ctx.succeeded = ctx.succeeded_indexes.total()
        if has_backoff_limit_per_index(job):
            self._judge_indexes(ctx)
        message = matched_rule_message(
            job["spec"].get("successPolicy"), completions, ctx.succeeded_indexes
        )
        if ctx.finished is None and message:
            ctx.finished = new_condition(
                SUCCESS_CRITERIA_MET, "SuccessPolicy", message, self._clock.now_rfc3339()
            )

    def _decide_failure(self, ctx: _Sync, key: str) -> None:
        """Whether the Job fails now: a FailureTarget already set, too many failures, or
        past its deadline (otherwise a sync is scheduled for the deadline)."""
        job, status, now = ctx.job, ctx.status, self._clock.now_rfc3339
        conditions = status.get("conditions") or []
        met = condition(conditions, SUCCESS_CRITERIA_MET)
        if met is not None and met.get("status") == "True":
            ctx.finished = met
            return
        target = condition(conditions, FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            ctx.finished = new_condition(FAILED, target["reason"], target["message"], now())
            return
        spec = job["spec"]
        message = _fail_job_message(job, ctx.pods)
        if message is not None:
            ctx.finished = new_condition(FAILURE_TARGET, "PodFailurePolicy", message, now())
            return
        deadline = spec.get("activeDeadlineSeconds")
        if ctx.failed > (spec.get("backoffLimit") or 0) or past_backoff_limit_on_failure(
            job, ctx.pods
        ):
            ctx.finished = new_condition(
                FAILURE_TARGET,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                now(),
            )
        elif deadline is not None and status.get("startTime") and not is_suspended(job):
            left = deadline - (self._clock.now() - parse_time(status["startTime"]))
            if left <= 0:
                ctx.finished = new_condition(
                    FAILURE_TARGET,
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    now(),
                )
            else:
                self._queue.add_after(key, left)

    def _judge_indexes(self, ctx: _Sync) -> None:
        """backoffLimitPerIndex: the failed indexes, whether they fail the Job, and the
        failed pods kept until they are replaced."""
        job, now = ctx.job, self._clock.now_rfc3339()
        ctx.failed_indexes = failed_indexes(job, ctx.pods)
        failed = ctx.failed_indexes.total()
        max_failed = job["spec"].get("maxFailedIndexes")
        if ctx.finished is None and max_failed is not None and failed > max_failed:
            ctx.finished = new_condition(
                FAILURE_TARGET,
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
                now,
            )
        elif (
            ctx.finished is None
            and failed > 0
            and failed + ctx.succeeded_indexes.total() >= job["spec"]["completions"]
        ):
            ctx.finished = new_condition(
                FAILURE_TARGET, "FailedIndexes", "Job has failed indexes", now
            )
        uncounted = [p for p in ctx.pods if not ctx.counted(p) and ctx.valid_index(p)]
        ctx.delayed = pods_with_delayed_deletion(
            job, uncounted, ctx.active_pods, ctx.succeeded_indexes, ctx.failed_indexes
        )

    def _update_suspended(self, job: Object) -> bool:
        """The Suspended condition follows spec.suspend; resuming restarts the clock of
        activeDeadlineSeconds."""
        status = job["status"]
        now = self._clock.now_rfc3339()
        if is_suspended(job):
            conditions, changed = ensure_condition(
                status.get("conditions") or [],
                SUSPENDED,
                "True",
                "JobSuspended",
                "Job suspended",
                now,
            )
            if changed:
                self._recorder.event(job, EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
        else:
            conditions, changed = ensure_condition(
                status.get("conditions") or [],
                SUSPENDED,
                "False",
                "JobResumed",
                "Job resumed",
                now,
            )
            if changed:
                self._recorder.event(job, EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
                status["startTime"] = now
        if conditions:
            status["conditions"] = conditions
        return changed

    # --- claiming pods -----------------------------------------------------------------------

    async def _claim(self, job: Object) -> list[Object]:
        """Every pod the Job owns once matching orphans are adopted (with the tracking
        finalizer) and owned pods that no longer match are released (ClaimPods)."""

        async def adopt(pod: Object) -> Object | None:
            patch = adopt_patch(pod, job, JOBS)
            patch["metadata"]["finalizers"] = [TRACKING_FINALIZER]
            try:
                if not await self._patch_pod(pod, patch):
                    return None
            except StatusError as e:
                if e.code in (409, 422):
                    return None  # changed meanwhile: the next sync sees it
                raise
            pod = clone(pod)
            finalizers = pod["metadata"].get("finalizers") or []
            pod["metadata"]["finalizers"] = [*finalizers, TRACKING_FINALIZER]
            pod["metadata"]["ownerReferences"] = patch["metadata"]["ownerReferences"]
            return pod

        return await claim(
            job,
            as_label_selector(job["spec"].get("selector")),
            claim_candidates(self._pods, job),
            adopt,
            lambda pod: self._patch_pod(pod, release_patch(pod, job)),
        )

    # --- pods --------------------------------------------------------------------------------

    async def _manage(self, ctx: _Sync, key: str) -> tuple[int, StatusError | None]:
        """Create or delete pods so that the right number is active (manageJob)."""
        job = ctx.job
        active = len(ctx.active_pods)
        if is_suspended(job):
            return await self._delete_surplus(ctx, key, ctx.active_pods)
        spec = job["spec"]
        parallelism = spec.get("parallelism") or 0
        completions = spec.get("completions")
        if completions is None:
            want = active if ctx.succeeded > 0 else parallelism
        else:
            want = max(0, min(completions - ctx.succeeded, parallelism))
        surplus = self._pods_for_removal(job, ctx.active_pods, max(0, active - want))
        if surplus:
            return await self._delete_surplus(ctx, key, surplus[:MAX_POD_CREATE_DELETE_PER_SYNC])
        terminating = ctx.terminating if only_replace_failed(job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active, None
        per_index = has_backoff_limit_per_index(job)
        remaining = 0.0 if per_index else ctx.backoff.remaining(self._clock.now())
        if remaining > 0:
            self._queue.add_after(key, max(remaining, SYNC_BATCH_PERIOD))
            return active, None
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        template = clone(spec.get("template") or {})
        indexes: list[int] = []
        if is_indexed(job):
            add_completion_index_env(template)
            indexes = self._indexes_to_create(ctx, key, diff)
            diff = len(indexes)
            if diff == 0:
                return active, None
        meta = template.setdefault("metadata", {})
        if TRACKING_FINALIZER not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), TRACKING_FINALIZER]
        pending = iter(indexes)

        async def create() -> None:
            index = next(pending, UNKNOWN_INDEX)
            annotations = {}
            if per_index:
                annotations = replacement_annotations(job, ctx.delayed.get(index))
            await self._create_pod(job, template, index, annotations)

        self.expectations.expect(key, adds=diff)
        created, error = await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(diff - created):
            self.expectations.creation_observed(key)
        if error is not None and not isinstance(error, StatusError):
            raise error
        return active + created, error

    def _indexes_to_create(self, ctx: _Sync, key: str, count: int) -> list[int]:
        """The lowest pending indexes (without a pod, not succeeded, not failed for good);
        with backoffLimitPerIndex those whose back-off is over, or none and a sync when the
        first one's ends."""
        taken = ctx.succeeded_indexes.with_indexes(indexes_of(ctx.active_pods))
        if only_replace_failed(ctx.job):
            taken = taken.with_indexes(indexes_of(p for p in ctx.pods if is_terminating(p)))
        if ctx.failed_indexes is not None:
            taken = taken.merge(ctx.failed_indexes)
        indexes = first_pending_indexes(taken, count, ctx.job["spec"]["completions"])
        if not has_backoff_limit_per_index(ctx.job):
            return indexes
        now = self._clock.now()
        waits = {ix: index_backoff(ctx.delayed.get(ix), now) for ix in indexes}
        ready = [ix for ix in indexes if waits[ix] == 0]
        if not ready and waits:
            self._queue.add_after(key, max(min(waits.values()), SYNC_BATCH_PERIOD))
        return ready

    def _pods_for_removal(self, job: Object, pods: list[Object], at_least: int) -> list[Object]:
        """Pods to delete: for an Indexed Job those of repeated or invalid indexes, then the
        ones deleted first in Kubernetes' order, to make `at_least`."""
        remove: list[Object] = []
        keep = pods
        if is_indexed(job):
            remove, keep = surplus_index_pods(pods, job["spec"]["completions"])
        if len(remove) < at_least:
            remove += active_pods_to_delete(keep, at_least - len(remove))
        return remove

    async def _create_pod(
        self, job: Object, template: Object, index: int, annotations: dict[str, str]
    ) -> None:
        if index != UNKNOWN_INDEX:
            template = with_completion_index(template, job["metadata"]["name"], index)
        if annotations:
            meta = template.get("metadata") or {}
            meta = {**meta, "annotations": {**(meta.get("annotations") or {}), **annotations}}
            template = {**template, "metadata": meta}
        pod = pod_from_template(template, job, JOBS)
        if index != UNKNOWN_INDEX:
            pod["metadata"]["generateName"] = indexed_generate_name(job["metadata"]["name"], index)
        try:
            created = await self._client.create(PODS, job["metadata"]["namespace"], pod)
        except StatusError as e:
            if namespace_terminating(e):
                return  # every create there fails: no error and no event (manageJob)
            self._recorder.event(job, EVENT_TYPE_WARNING, "FailedCreate", f"Error creating: {e}")
            raise
        self._recorder.event(
            job,
            EVENT_TYPE_NORMAL,
            "SuccessfulCreate",
            f"Created pod: {created['metadata']['name']}",
        )

    async def _delete_surplus(
        self, ctx: _Sync, key: str, pods: list[Object]
    ) -> tuple[int, StatusError | None]:
        """Delete pods the Job has too many of, their finalizer removed first: they are not
        counted as failed (deleteJobPods)."""
        self.expectations.expect(key, deletes=[object_key(p) for p in pods])

        async def delete(pod: Object) -> tuple[bool, StatusError | None]:
            try:
                if has_tracking_finalizer(pod):
                    await self._client.patch(
                        PODS,
                        pod["metadata"]["namespace"],
                        pod["metadata"]["name"],
                        remove_finalizer_patch(),
                    )
                await self._delete_pod(ctx.job, pod)
            except StatusError as e:
                self.expectations.deletion_observed(key, object_key(pod))
                if e.code != 404:
                    return False, e
            return True, None

        results = await asyncio.gather(*(delete(p) for p in pods))
        removed = sum(ok for ok, _ in results)
        ctx.terminating += removed
        ctx.ready -= sum(is_pod_ready(p) for p in pods)
        return len(ctx.active_pods) - removed, next((e for _, e in results if e), None)

    async def _delete_active_pods(
        self, job: Object, pods: list[Object]
    ) -> tuple[int, int, StatusError | None]:
        """Delete the pods of a finishing Job, keeping their finalizers: they are counted as
        failed once their deletion shows (deleteActivePods)."""

        async def delete(pod: Object) -> StatusError | None:
            try:
                await self._delete_pod(job, pod)
            except StatusError as e:
                return None if e.code == 404 else e
            return None

        results = await asyncio.gather(*(delete(p) for p in pods))
        deleted = sum(e is None for e in results)
        ready = sum(is_pod_ready(p) for p in pods)
        return ready, deleted, next((e for e in results if e is not None), None)

    async def _delete_pod(self, job: Object, pod: Object) -> None:
        name = pod["metadata"]["name"]
        try:
            await self._client.delete(PODS, pod["metadata"]["namespace"], name)
        except StatusError as e:
            if e.code != 404:
                self._recorder.event(
                    job, EVENT_TYPE_WARNING, "FailedDelete", f"Error deleting: {e}"
                )
            raise
        self._recorder.event(job, EVENT_TYPE_NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")

    # --- status ------------------------------------------------------------------------------

    async def _track_status(self, ctx: _Sync, key: str, needs_flush: bool) -> None:
        """Record finished pods as uncounted, remove their finalizers, count them, and add
        the terminal condition once nothing is left to count or to terminate
        (trackJobStatusAndRemoveFinalizers)."""
        job, status = ctx.job, ctx.status
        indexed = is_indexed(job)
        pods = sorted(ctx.pods, key=completion_index) if indexed else ctx.pods
        with_finalizer = {p["metadata"]["uid"] for p in pods if not ctx.counted(p)}
        needs_flush |= count_uncounted(status, with_finalizer)
        uncounted = status["uncountedTerminatedPods"]
        to_remove: list[Object] = []
        new_indexes: list[int] = []
        reached_max = False
        failing = ctx.finished is not None and ctx.finished["type"] != SUCCESS_CRITERIA_MET
        for pod in pods:
            if ctx.counted(pod):
                continue
            uid = pod["metadata"]["uid"]
            failed = is_pod_failed(pod, job)
            if not ctx.finalizer_removable(pod, failed):
                continue
            to_remove.append(pod)
            if phase(pod) == "Succeeded" and uid not in ctx.uncounted_failed:
                if indexed:
                    ix = completion_index(pod)
                    if ctx.valid_index(pod) and not ctx.prev_succeeded_indexes.has(ix):
                        new_indexes.append(ix)
                        needs_flush = True
                elif uid not in ctx.uncounted_succeeded:
                    uncounted["succeeded"] = [*(uncounted.get("succeeded") or []), uid]
                    needs_flush = True
            elif (failed or failing) and ctx.failure_to_count(pod):
                uncounted["failed"] = [*(uncounted.get("failed") or []), uid]
                needs_flush = True
            pending = len(new_indexes) + sum(len(v) for v in uncounted.values())
            if pending >= MAX_UNCOUNTED_PODS:
                reached_max = True  # the rest waits for the next sync, which this one causes
                break
        if indexed:
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_indexes(new_indexes)
            text = str(ctx.succeeded_indexes)
            if text != status.get("completedIndexes", ""):
                needs_flush = True
            set_omitempty(status, "completedIndexes", text)
            set_omitempty(status, "succeeded", ctx.succeeded_indexes.total())
            if ctx.failed_indexes is not None:
                text = str(ctx.failed_indexes)
                needs_flush |= status.get("failedIndexes") != text
                status["failedIndexes"] = text
        finished = ctx.finished
        if finished is not None and finished["type"] == FAILURE_TARGET:
            status["conditions"] = [*(status.get("conditions") or []), finished]
            needs_flush = True
            finished = new_condition(
                FAILED, finished["reason"], finished["message"], self._clock.now_rfc3339()
            )
        elif finished is not None and finished["type"] == SUCCESS_CRITERIA_MET:
            if condition(status.get("conditions") or [], SUCCESS_CRITERIA_MET) is None:
                status["conditions"] = [*(status.get("conditions") or []), finished]
                needs_flush = True
            finished = new_condition(
                COMPLETE, finished["reason"], finished["message"], self._clock.now_rfc3339()
            )
        ctx.finished = finished
        needs_flush = await self._flush_and_remove_finalizers(
            ctx, key, to_remove, with_finalizer, needs_flush
        )
        done = not reached_max and self._enact_finished(ctx)
        if needs_flush or done:
            await self._write_status(ctx)
            if done and ctx.finished is not None:
                self._record_finished(ctx.job, ctx.finished)

    async def _flush_and_remove_finalizers(
        self,
        ctx: _Sync,
        key: str,
        pods: list[Object],
        with_finalizer: set[str],
        needs_flush: bool,
    ) -> bool:
        """Write the uncounted uids (and an interim condition), remove those pods'
        finalizers, then count the pods whose finalizer is gone. Returns whether status
        changes are left to write."""
        if needs_flush:
            await self._write_status(ctx)
            self._backoff[key] = ctx.backoff
            needs_flush = False
        error: StatusError | None = None
        if pods:
            self.finalizer_expectations.expect(key, (p["metadata"]["uid"] for p in pods))
            results = await asyncio.gather(*(self._remove_finalizer(key, p) for p in pods))
            for pod, result in zip(pods, results, strict=True):
                if result is None:
                    with_finalizer.discard(pod["metadata"]["uid"])
                elif error is None:
                    error = result
        if count_uncounted(ctx.status, with_finalizer):
            needs_flush = True
        if error is not None:
            if needs_flush:
                await self._write_status(ctx)
            raise error
        return needs_flush

    async def _remove_finalizer(self, key: str, pod: Object) -> StatusError | None:
        try:
            await self._client.patch(
                PODS,
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                remove_finalizer_patch(),
            )
        except StatusError as e:
            self.finalizer_expectations.observed(key, pod["metadata"]["uid"])
            return None if e.code == 404 else e
        return None

    def _enact_finished(self, ctx: _Sync) -> bool:
        """Add the Complete or Failed condition once no pod is left uncounted or
        terminating."""
        finished = ctx.finished
        if finished is None:
            return False
        status = ctx.status
        if any(status["uncountedTerminatedPods"].values()) or ctx.terminating > 0:
            return False
        conditions, _ = ensure_condition(
            status.get("conditions") or [],
            finished["type"],
            finished["status"],
            finished["reason"],
            finished["message"],
            self._clock.now_rfc3339(),
        )
        status["conditions"] = conditions
        if finished["type"] == COMPLETE:
            status["completionTime"] = finished["lastTransitionTime"]
        return True

    def _record_finished(self, job: Object, finished: Object) -> None:
        if finished["type"] == COMPLETE:
            completions = job["spec"].get("completions")
            if completions is not None and job["status"].get("succeeded", 0) > completions:
                self._recorder.event(
                    job,
                    EVENT_TYPE_WARNING,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                )
            self._recorder.event(job, EVENT_TYPE_NORMAL, "Completed", "Job completed")
        else:
            self._recorder.event(job, EVENT_TYPE_WARNING, finished["reason"], finished["message"])

    async def _write_status(self, ctx: _Sync) -> None:
        written = await self._client.update_status_own(JOBS, ctx.job)
        ctx.job["metadata"] = clone(written["metadata"])


def _api_backoff(clock: Clock) -> RateLimiter:
    """The Job controller's queues back off per key only, without the overall bucket."""
    return RateLimiter(clock, API_BACKOFF, MAX_API_BACKOFF, qps=None)


def _fail_job_message(job: Object, pods: list[Object]) -> str | None:
    """The message of the first failed pod a FailJob rule of the pod failure policy
    matches."""
    policy = job["spec"].get("podFailurePolicy")
    if policy is None:
        return None
    for pod in pods:
        if is_pod_failed(pod, job):
            message = judge(policy, pod).fail_job_message
            if message is not None:
                return message
    return None


def _managed_elsewhere(job: Object) -> bool:
    managed_by = job["spec"].get("managedBy")
    return managed_by is not None and managed_by != MANAGED_BY_DEFAULT
