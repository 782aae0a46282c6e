"""The client interface every component talks to the API through.

Objects a client returns (from get, list, watch and every write) are SHARED and READ-ONLY: an
in-process client hands out the very dicts the store holds, so changing one would change
what every other reader sees. Clone before changing (`pinnace.api.objects.clone`), or
let `modify` and `patch` do it: they work on copies. Objects passed in (create, update) are
not kept by the client; the caller may reuse them.

Kinds are `pinnace.api.kind.Kind`s, as `pinnace.api.catalog` gives them. Every failure is a
`pinnace.api.status.StatusError` carrying the code, reason and message kube-apiserver would
send (404 NotFound, 409 Conflict or AlreadyExists, 422 Invalid, 429 TooManyRequests...).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone
from pinnace.api.options import DeleteOptions
from pinnace.api.patch import PatchType
from pinnace.client.retry import retry_on_conflict
from pinnace.clock import Clock


class TokenGrant(Protocol):
    """A TokenRequest the API server answered but for its token's signature."""

    @property
    def request(self) -> Object:
        """The TokenRequest with its status, of which the token is empty."""

    @property
    def sign(self) -> Callable[[], str]:
        """Signs the token now with the claims set when the request was answered; it holds
        nothing else of the request."""


Mutation = Callable[[Object], Object]
"""Gets a copy of the latest object and returns the object to write."""


class Client(ABC):
    """get, list, watch and the writes, with kube-apiserver's semantics: resourceVersions,
    conflicts and watch order are those of the API."""

    @property
    @abstractmethod
    def clock(self) -> Clock:
        """The clock of the components using this client (timestamps, retry delays)."""

    # --- reads -------------------------------------------------------------------------------

    @abstractmethod
    async def get(self, kind: Kind, namespace: str, name: str) -> Object: ...

    @abstractmethod
    async def list(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
    ) -> Object:
        """A `<Kind>List` (all namespaces when `namespace` is empty). With `limit`, one page:
        pass its `metadata.continue` as `continue_token` for the next."""

    @abstractmethod
    def watch(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
    ) -> AsyncIterator[Object]:
        """`{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}` events, in
        resourceVersion order. From resourceVersion N: every change after N; from "" every
        existing object first, as ADDED. A start older than the server keeps history for
        gives one ERROR event (a Status with code 410) and the stream ends; the stream may
        also end when the server drops a watcher that fell behind: watch again from the last
        resourceVersion seen."""

    # --- writes ------------------------------------------------------------------------------

    @abstractmethod
    async def create(self, kind: Kind, namespace: str, obj: Object) -> Object: ...

    async def create_own(self, kind: Kind, namespace: str, obj: Object) -> Object:
        """`create` an object this process built in the form the API server's decoding gives
        (a component's own Event: canonical times, no unknown field, no zero Go's encoding
        leaves out), which it hands over (it changes it no more). An API server in the same
        process takes it as it is (decoding it would give it back); over HTTP it is `create`."""
        return await self.create(kind, namespace, obj)

    async def record_own(self, kind: Kind, namespace: str, obj: Object) -> None:
        """`create_own` for a writer that does not read the answer (a recorder's Event): an
        API server in the same process is spared its conversion to the version written."""
        await self.create_own(kind, namespace, obj)

    @abstractmethod
    async def update(self, kind: Kind, obj: Object) -> Object:
        """PUT `obj` (namespace and name from its metadata). Its resourceVersion, when set, is
        a precondition: a stale one fails with 409 Conflict."""

    async def update_own(self, kind: Kind, obj: Object) -> Object:
        """`update` with an object this process built in the form decoding gives and hands
        over, as for `create_own` (the kubelet's Lease, renewed from the one last written; a
        Lease has no defaults, which would change in place what it shares with the stored
        one): an API server in the same process takes it as it is; over HTTP it is `update`."""
        return await self.update(kind, obj)

    @abstractmethod
    async def update_status(self, kind: Kind, obj: Object) -> Object:
        """PUT the status subresource: only `obj`'s status is written."""

    async def update_status_own(self, kind: Kind, obj: Object) -> Object:
        """`update_status` with an object this process keeps in the form decoding gives (a
        controller's copy of what it read, its status changed: the Job controller's), as for
        `update_own`; over HTTP it is `update_status`."""
        return await self.update_status(kind, obj)

    @abstractmethod
    async def update_finalize(self, kind: Kind, obj: Object) -> Object:
        """PUT namespaces/finalize: only the namespace's spec.finalizers is written."""

    @abstractmethod
    async def update_approval(self, kind: Kind, obj: Object) -> Object:
        """PUT certificatesigningrequests/approval: only the request's conditions are
        written."""

    @abstractmethod
    async def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.STRATEGIC_MERGE,
        *,
        subresource: str = "",
    ) -> Object: ...

    async def patch_own(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.STRATEGIC_MERGE,
        *,
        subresource: str = "",
    ) -> Object:
        """`patch` with a document this process built and hands over, in the form decoding
        gives once applied, as for `create_own` (the kubelet's pod status: a zero Go's
        encoding leaves out is a null, which removes it): an API server in the same process
        takes the patched object as it is; over HTTP it is `patch`."""
        return await self.patch(kind, namespace, name, patch, patch_type, subresource=subresource)

    @abstractmethod
    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Object:
        """The object as deleted or as marked for deletion, or a Status for kinds that
        answer with one."""

    @abstractmethod
    async def delete_collection(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        options: DeleteOptions | None = None,
    ) -> Object: ...

    # --- subresources ------------------------------------------------------------------------

    @abstractmethod
    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        """pods/binding: put `pod` on `node`; 409 if it already has a node."""

    @abstractmethod
    async def evict(self, namespace: str, name: str, options: DeleteOptions | None = None) -> None:
        """pods/eviction: delete the pod if its disruption budget allows; 429 if not."""

    @abstractmethod
    async def request_token(
        self,
        namespace: str,
        name: str,
        request: Mapping[str, Any],
        *,
        issued_at: float | None = None,
    ) -> Object:
        """serviceaccounts/token: the TokenRequest `request` answered with a token.
        `issued_at`: the answer the request would have had at that earlier time, issued then
        (the simulated mode's deferred token refreshes, docs/simulation.md); in process
        only."""

    @abstractmethod
    async def grant_token(
        self, namespace: str, name: str, request: Mapping[str, Any]
    ) -> TokenGrant:
        """serviceaccounts/token as `request_token` answers it now, every check made and the
        claims set, but for the token's signature, made by `TokenGrant.sign` when called (the
        simulated mode's first tokens, signed when read, docs/simulation.md); in process
        only. `request` is built in the form decoding gives and handed over, as for
        `create_own` (the kubelet's own TokenRequest)."""

    @abstractmethod
    async def get_scale(self, kind: Kind, namespace: str, name: str) -> Object:
        """The autoscaling/v1 Scale of a Deployment or ReplicaSet."""

    @abstractmethod
    async def update_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> Object:
        """Set spec.replicas through the scale subresource; returns the new Scale."""

    # --- read-modify-write -------------------------------------------------------------------

    async def modify(
        self, kind: Kind, namespace: str, name: str, mutate: Mutation, *, subresource: str = ""
    ) -> Object:
        """Read the object, change a copy with `mutate`, write it back with the read
        resourceVersion as precondition; on a 409 Conflict read again and redo it, as
        client-go's RetryOnConflict does. `subresource` is "" or "status"."""
        if subresource not in ("", "status"):
            raise ValueError(f"modify writes the object or its status, not {subresource!r}")

        async def attempt() -> Object:
            wanted = mutate(clone(await self.get(kind, namespace, name)))
            if subresource:
                return await self.update_status(kind, wanted)
            return await self.update(kind, wanted)

        return await retry_on_conflict(self.clock, attempt)


def delete_options_body(options: DeleteOptions) -> dict[str, Any]:
    """`options` as the JSON DeleteOptions a request body (or an Eviction) carries."""
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if options.grace_period_seconds is not None:
        body["gracePeriodSeconds"] = options.grace_period_seconds
    if options.propagation_policy:
        body["propagationPolicy"] = options.propagation_policy
    if options.orphan_dependents is not None:
        body["orphanDependents"] = options.orphan_dependents
    preconditions = {
        key: value
        for key, value in (
            ("uid", options.precondition_uid),
            ("resourceVersion", options.precondition_resource_version),
        )
        if value
    }
    if preconditions:
        body["preconditions"] = preconditions
    if options.dry_run:
        body["dryRun"] = ["All"]
    return body


def binding_body(pod: Mapping[str, Any], node: str) -> dict[str, Any]:
    """The Binding that puts `pod` on `node`, as kube-scheduler's DefaultBinder sends it."""
    m = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"namespace": m["namespace"], "name": m["name"], "uid": m.get("uid")},
        "target": {"kind": "Node", "name": node},
    }


def eviction_body(namespace: str, name: str, options: DeleteOptions | None) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"namespace": namespace, "name": name},
        "deleteOptions": delete_options_body(options or DeleteOptions()),
    }
