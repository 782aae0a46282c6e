"""The status manager of one node: what its kubelet writes of its pods, after the v1.32
kubelet's pkg/kubelet/status/status_manager.go.

A pod worker whose status changes has it written (`sync`, the manager's SetPodStatus): one
writer per pod patches the pod's status subresource until the status stops changing, the patch
carrying the pod's uid (so it cannot land on a new pod of the same name). A write that fails is
tried again at the manager's next sync (STATUS_SYNC_PERIOD), or at once when the status changes
before that, as its syncBatch does; one for a pod that is gone is dropped. Once a deleted pod's
containers have all stopped, the manager deletes it for good (grace period 0, uid
precondition), as its syncPod does when the pod canBeDeleted.

Where the kubelet compares every pod's stored status with its own on each sync
(needsReconcile), this one compares when a watch event shows a write newer than its own
(`overwritten`): docs/differences.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import Client, PatchType
from pinnace.kubelet.config import STATUS_SYNC_PERIOD
from pinnace.kubelet.failures import LoopFailures
from pinnace.kubelet.worker import PodWorker

log = logging.getLogger(__name__)

POD_STATUS_WRITE = "pod status write"
"""Its loop, as the agent's log names it."""

PODS = catalog.kind("", "pods")


class StatusManager:
    """Writes the statuses of the pods of the node `node`, of which `workers` holds the
    workers (the agent's, by uid, until their pods are gone from the API)."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = ("_tasks", "client", "failures", "node", "workers")

    def __init__(
        self,
        client: Client,
        node: str,
        workers: Mapping[str, PodWorker],
        failures: LoopFailures,
    ) -> None:
        self.client = client
        self.node = node
        self.workers = workers
        self.failures = failures
        self._tasks: set[asyncio.Task[Any]] = set()
        """What it runs in the background (`until_landed`, the writers of pods gone), until
        each is done or the kubelet ends (`shut_down`)."""

    def sync(self, worker: PodWorker) -> None:
        """Have the worker's status written: now, or after the write under way."""
        worker.dirty = True
        if worker.writer is None:
            worker.writer = self.client.clock.loop.create_task(self._write_worker(worker))

    def overwritten(self, pod: Mapping[str, Any], worker: PodWorker) -> bool:
        """Someone else wrote a status this agent does not hold (the node lifecycle controller
        marks the pods of an unreachable node not ready): as the kubelet's status manager
        does, the agent puts its own back, so the pods of a node that comes back are Ready
        again."""
        own = worker.status_written
        if own is None or worker.writer is not None:
            return False
        if int(pod["metadata"]["resourceVersion"]) <= own:
            return False
        stored = pod.get("status") or {}
        return any(stored.get(k) != v for k, v in worker.status().items())

    def pod_deleted(self, worker: PodWorker) -> None:
        """The worker's pod is gone from the API: a write of its status under way runs to its
        end here, no longer held by the worker."""
        if worker.writer is not None:
            self._hold(worker.writer)

    async def _write_worker(self, worker: PodWorker) -> None:
        """Write the worker's status (`_write_status`); a pass that fails other than by the API
        server's refusal (which `_write_status` retries) is logged, once per distinct error."""
        with self.failures.guard(POD_STATUS_WRITE):
            await self._write_status(worker)

    async def _write_status(self, worker: PodWorker) -> None:
        """Write the worker's status until it stops changing; once its containers have
        stopped after a deletion, delete the pod for good."""
        published: dict[str, Any] | None = None
        try:
            while worker.dirty:
                worker.dirty = False
                wanted = worker.status()
                if wanted != published:
                    try:
                        written = await self.patch_status(worker.metadata(), wanted)
                    except StatusError as e:
                        if not _gone(e):
                            self._failed(worker, e)
                        return
                    worker.unsynced = False
                    # The int the worker holds, when it has heard of the write already.
                    same = written == worker.resource_version
                    worker.status_written = worker.resource_version if same else written
                    published = wanted
        finally:
            # At once, not in a done callback: a change made after the last check above must
            # find no writer and start one.
            worker.writer = None
        if worker.terminated:
            self.delete_pod(worker.metadata())

    def _failed(self, worker: PodWorker, e: StatusError) -> None:
        log.warning(
            "node %s: pod %s/%s status not written, trying again in %g s: %s",
            self.node,
            worker.namespace,
            worker.name,
            STATUS_SYNC_PERIOD,
            e.message,
        )
        worker.unsynced = True
        self.client.clock.call_later(STATUS_SYNC_PERIOD, self._resync, worker)

    def _resync(self, worker: PodWorker) -> None:
        """The next sync: write a status that could not be written."""
        if worker.unsynced and self.workers.get(worker.uid) is worker:
            self.sync(worker)

    async def patch_status(self, m: Mapping[str, Any], pod_status: dict[str, Any]) -> int:
        """Patch the status of the pod of metadata `m`; the resourceVersion written. The patch
        carries the pod's uid, as the kubelet's does, so it cannot land on a pod deleted and
        recreated under the same name meanwhile: the API server refuses it (422, the uid is
        immutable), which `_gone` reads as the pod being gone. It drops the scheduler's
        status.nominatedNodeName: the kubelet's patch turns the stored status into the one it
        generated, which has none (so a preemptor, once running, is nominated no more). The
        status is built in the form decoding gives once patched (`Client.patch_own`:
        tests/client/test_own_writes.py holds every such write to what decoding makes of it)."""
        written = await self.client.patch_own(
            PODS,
            m["namespace"],
            m["name"],
            {"metadata": {"uid": m["uid"]}, "status": {**pod_status, "nominatedNodeName": None}},
            PatchType.MERGE,
            subresource="status",
        )
        return int(written["metadata"]["resourceVersion"])

    def delete_pod(self, m: Mapping[str, Any]) -> None:
        """Delete the pod of metadata `m` for good (unless it is gone already, or a new pod
        holds its name: the uid is a precondition)."""
        options = DeleteOptions(grace_period_seconds=0, precondition_uid=m["uid"])
        what = f"pod {m['namespace']}/{m['name']} not deleted"
        self.until_landed(
            what, lambda: self.client.delete(PODS, m["namespace"], m["name"], options)
        )

    def until_landed(self, what: str, write: Callable[[], Awaitable[object]]) -> None:
        """Run `write` in the background until it lands, tried again at each of the manager's
        syncs while it fails, as the kubelet tries again what it writes of a pod; dropped once
        what it writes to is gone."""

        async def attempts() -> None:
            while True:
                try:
                    await write()
                    return
                except StatusError as e:
                    if _gone(e):
                        return
                    log.warning("node %s: %s: %s", self.node, what, e.message)
                await self.client.clock.sleep(STATUS_SYNC_PERIOD)

        self._background(attempts())

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` on its own, held until it is done or the kubelet ends."""
        self._hold(self.client.clock.loop.create_task(work))

    def _hold(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def shut_down(self) -> None:
        """The kubelet ends: what it runs in the background is given up."""
        for task in self._tasks:
            task.cancel()


def _gone(e: StatusError) -> bool:
    """The API server refused a write because the object it was for is gone: not found, or
    another object of that name holds it now (the uid a patch carries is refused as changed,
    or a uid precondition fails)."""
    if e.code == 404:
        return True
    if e.code == 409:
        return "Precondition failed: UID in precondition" in e.message
    causes = (e.details or {}).get("causes") or ()
    return e.code == 422 and any(c.get("field") == "metadata.uid" for c in causes)
