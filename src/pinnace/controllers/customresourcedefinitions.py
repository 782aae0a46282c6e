"""The controllers apiextensions-apiserver v1.32 runs beside its CustomResourceDefinition
storage, as one component of the API server's process: the naming controller
(controller/status/naming_controller.go) accepts a CRD's names unless another CRD of its group
took them, the establishing controller (controller/establish) marks it Established, and the
finalizer controller (controller/finalizer/crd_finalizer.go) deletes every custom resource of
a CRD being deleted before it lets the CRD go.

It runs in the API server's process, on an in-process client: an established CRD's kinds
are added to the server's `KindRegistry` before the
Established condition is written, so a client that waits for it finds the kinds served; they
leave the registry with the CRD.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pinnace.api import catalog
from pinnace.api.apiextensions import crd as crds
from pinnace.api.apiextensions.custom import built_in, served_kinds, stored_served
from pinnace.api.objects import Object, clone, meta
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers.controller_utils import RateLimiter, WorkQueue

CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")
RETRY_SECONDS = 1.0
_NAME_FIELDS = (("plural", "Plural"), ("singular", "Singular"), ("kind", "Kind"))
_LIST_KIND = ("listKind", "ListKind")


def _names(crd: Object, where: str) -> dict[str, Any]:
    source = crds.names_of(crd) if where == "spec" else (crd.get("status") or {})
    value = source if where == "spec" else source.get("acceptedNames")
    return value if isinstance(value, dict) else {}


def name_conflict(crd: Object, others: list[Object]) -> tuple[str, str] | None:
    """(reason, message) of the first name of `crd` another CRD of its group has accepted."""
    group = crds.spec_of(crd).get("group")
    wanted = _names(crd, "spec")
    taken: dict[str, set[str]] = {"resource": set(), "kind": set()}
    for other in others:
        if crds.spec_of(other).get("group") != group or other is crd:
            continue
        if meta(other).get("name") == meta(crd).get("name"):
            continue
        accepted = _names(other, "status")
        resources = [accepted.get("plural"), accepted.get("singular")]
        resources += list(accepted.get("shortNames") or ())
        taken["resource"] |= {str(r) for r in resources if r}
        kinds = (accepted.get("kind"), accepted.get("listKind"))
        taken["kind"] |= {str(k) for k in kinds if k}
    for key, reason in (*_NAME_FIELDS[:2], ("shortNames", "ShortNames")):
        values = wanted.get(key) or ()
        for value in [values] if isinstance(values, str) else values:
            if value in taken["resource"]:
                return f"{reason}Conflict", f'"{value}" is already in use'
    for key, reason in (_NAME_FIELDS[2], _LIST_KIND):
        value = wanted.get(key)
        if value and value in taken["kind"]:
            return f"{reason}Conflict", f'"{value}" is already in use'
    return None


class CustomResourceDefinitions:
    """Names, establishes and finalizes the API server's CRDs, and keeps its registry of
    their kinds."""

    def __init__(self, client: Client, kinds: KindRegistry) -> None:
        self._kinds = kinds
        self._client = client
        self._queue = WorkQueue(client.clock, RateLimiter(client.clock, cap=60.0))
        self._crds = Informer(self._client, CRDS)
        self._crds.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._enqueue,
        )
        self._running: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Serve the established CRDs' kinds (a restart's) before the API server takes
        requests, then follow CRDs."""
        self._crds.start()
        await self._crds.wait_for_sync()
        for crd in self._crds.list():
            if crds.is_true(crd, crds.ESTABLISHED):
                self._serve(crd)
        self._running.append(self._client.clock.loop.create_task(self._queue.run(self.sync)))

    async def stop(self) -> None:
        await cancel_and_wait(self._running)
        self._running.clear()
        await self._crds.stop()

    def _enqueue(self, crd: Object) -> None:
        self._queue.add(meta(crd)["name"])

    async def sync(self, name: str) -> None:
        crd = self._crds.get("", name)
        if crd is None:
            self._kinds.remove(name)
            return
        if meta(crd).get("deletionTimestamp"):
            await self._finalize(crd)
            return
        named, accepted = await self._accept_names(crd)
        if crds.is_true(named, crds.ESTABLISHED):
            self._serve(named)
        elif accepted:
            await self._establish(named)

    def _serve(self, crd: Object) -> None:
        if built_in(crd):
            return
        stored, others = served_kinds(crd)
        # What crdHandler compares to keep a CRD's storage: its spec and accepted names.
        source = (crds.spec_of(crd), _names(crd, "status"))
        self._kinds.add(meta(crd)["name"], stored, others, served=stored_served(crd), source=source)

    async def _accept_names(self, crd: Object) -> tuple[Object, bool]:
        """The naming controller: the CRD with its names accepted unless another CRD of its
        group has them (an established CRD keeps being served by the names it had), and
        whether they were."""
        now = self._client.clock.now_rfc3339()
        updated = clone(crd)
        conflict = name_conflict(crd, self._crds.list())
        if conflict is None:
            updated.setdefault("status", {})["acceptedNames"] = dict(_names(crd, "spec"))
            accepted = {
                "type": crds.NAMES_ACCEPTED,
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            }
            established = {
                "type": crds.ESTABLISHED,
                "status": "False",
                "reason": "Installing",
                "message": "the initial names have been accepted",
            }
        else:
            reason, message = conflict
            accepted = {"type": crds.NAMES_ACCEPTED, "status": "False", "reason": reason}
            accepted["message"] = message
            established = {
                "type": crds.ESTABLISHED,
                "status": "False",
                "reason": "NotAccepted",
                "message": "not all names are accepted",
            }
        crds.set_condition(updated, accepted, now)
        if not crds.is_true(crd, crds.ESTABLISHED):
            crds.set_condition(updated, established, now)
        if updated.get("status") != crd.get("status"):
            updated = await self._client.update_status(CRDS, updated)
        return updated, conflict is None

    async def _establish(self, crd: Object) -> None:
        """The establishing controller: serve the kinds, then say so."""
        now = self._client.clock.now_rfc3339()
        self._serve(crd)
        established = {
            "type": crds.ESTABLISHED,
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        }
        final = clone(crd)
        crds.set_condition(final, established, now)
        await self._client.update_status(CRDS, final)

    async def _finalize(self, crd: Object) -> None:
        if crds.CLEANUP_FINALIZER not in (meta(crd).get("finalizers") or []):
            return
        name = meta(crd)["name"]
        kind = self._kinds.added(name)
        now = self._client.clock.now_rfc3339()
        if kind is not None:
            self._serve(crd)
            crd = await self._set_terminating(
                crd, "InstanceDeletionInProgress", "CustomResource deletion is in progress", now
            )
            listed = await self._client.list(kind, "")
            remaining = 0
            for item in listed["items"]:
                m = item["metadata"]
                if m.get("deletionTimestamp"):
                    remaining += 1
                    continue
                try:
                    await self._client.delete(kind, m.get("namespace", ""), m["name"])
                except StatusError as e:
                    if e.code != 404:
                        raise
                remaining += 1
            if remaining and (await self._client.list(kind, ""))["items"]:
                self._queue.add_after(name, RETRY_SECONDS)
                return
            crd = await self._set_terminating(
                crd, "InstanceDeletionCompleted", "removed all instances", now, status="False"
            )
        self._kinds.remove(name)
        updated = clone(crd)
        finalizers = [f for f in meta(updated)["finalizers"] if f != crds.CLEANUP_FINALIZER]
        meta(updated)["finalizers"] = finalizers
        await self._client.update(CRDS, updated)

    async def _set_terminating(
        self, crd: Object, reason: str, message: str, now: str, status: str = "True"
    ) -> Object:
        updated = clone(crd)
        condition = {"type": crds.TERMINATING, "status": status, "reason": reason}
        crds.set_condition(updated, condition | {"message": message}, now)
        if updated.get("status") == crd.get("status"):
            return crd
        return await self._client.update_status(CRDS, updated)
