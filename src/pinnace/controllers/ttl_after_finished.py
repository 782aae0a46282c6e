"""The TTL-after-finished controller: deletes a Job ttlSecondsAfterFinished seconds after it
completed or failed, as kube-controller-manager's (v1.32). The deletion cascades in the
foreground: the garbage collector removes the Job's pods first, then the Job goes."""

from __future__ import annotations

from pinnace.api.batch.job_status import is_finished
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory, object_key
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.controllers.job import JOBS


def needs_cleanup(job: Object) -> bool:
    return job["spec"].get("ttlSecondsAfterFinished") is not None and is_finished(
        job.get("status") or {}
    )


def finished_at(job: Object) -> float | None:
    """When the Job got its Complete or Failed condition."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            since = c.get("lastTransitionTime")
            return parse_time(since) if since else None
    return None


class TTLAfterFinishedController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._queue = WorkQueue(self._clock)
        self._jobs: Informer = informers.informer(JOBS)
        self._jobs.add_event_handler(
            on_add=self._enqueue_if_finished,
            on_update=lambda old, new: self._enqueue_if_finished(new),
        )

    async def run(self) -> None:
        """Delete expired Jobs forever; cancel the task to stop."""
        await self._jobs.wait_for_sync()
        await self._queue.run(self.sync)

    def _enqueue_if_finished(self, job: Object) -> None:
        if not job["metadata"].get("deletionTimestamp") and needs_cleanup(job):
            self._queue.add(object_key(job))

    def _time_left(self, job: Object) -> float | None:
        """Seconds until the Job expires (<= 0: expired), or None if it never does."""
        if not needs_cleanup(job):
            return None
        finished = finished_at(job)
        if finished is None:
            return None
        return finished + job["spec"]["ttlSecondsAfterFinished"] - self._clock.now()

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self._jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        left = self._time_left(job)
        if left is None:
            return
        if left > 0:
            self._queue.add_after(key, left)
            return
        # The cache may be stale (the TTL changed, the Job was recreated): check a fresh copy.
        try:
            fresh = await self._client.get(JOBS, namespace, name)
        except StatusError as e:
            if e.code == 404:
                return
            raise
        left = self._time_left(fresh)
        if left is None or left > 0:
            if left is not None:
                self._queue.add_after(key, left)
            return
        options = DeleteOptions(
            propagation_policy="Foreground", precondition_uid=fresh["metadata"]["uid"]
        )
        try:
            await self._client.delete(JOBS, namespace, name, options)
        except StatusError as e:
            if e.code not in (404, 409):
                raise
