"""A node's connection to the API server, which a fault can cut.

`Link(client, node)` is a `Client` that passes every call on to `client` while `connected`;
cut, every call fails as a kubelet's requests fail when its node has lost the network (or the
kubelet is gone): no answer. client-go reports that as a dial or request timeout, not as an API
Status; here it is a StatusError (504, Timeout), so the agent treats it as it treats any write
the API refused: it tries again when the kubelet would (the lease and node status at their next
period, a pod's status at the status manager's next sync), and its writes land once the link is
back. The pool gives each agent its own link (`NodeAgentPool.partition`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.client.interface import Client, TokenGrant
from pinnace.clock import Clock


class Link(Client):
    def __init__(self, client: Client, node: str) -> None:
        self._client = client
        self.node = node
        self.connected = True

    def _check(self) -> None:
        if not self.connected:
            raise unreachable(self.node)

    @property
    def clock(self) -> Clock:
        return self._client.clock

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        self._check()
        return await self._client.get(kind, namespace, name)

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
        self._check()
        return await self._client.list(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
        )

    def watch(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
    ) -> AsyncIterator[Object]:
        self._check()
        return self._client.watch(
            kind,
            namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
        )

    async def create(self, kind: Kind, namespace: str, obj: Object) -> Object:
        self._check()
        return await self._client.create(kind, namespace, obj)

    async def create_own(self, kind: Kind, namespace: str, obj: Object) -> Object:
        self._check()
        return await self._client.create_own(kind, namespace, obj)

    async def record_own(self, kind: Kind, namespace: str, obj: Object) -> None:
        self._check()
        await self._client.record_own(kind, namespace, obj)

    async def update(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await self._client.update(kind, obj)

    async def update_own(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await self._client.update_own(kind, obj)

    async def update_status(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await self._client.update_status(kind, obj)

    async def update_finalize(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await self._client.update_finalize(kind, obj)

    async def update_approval(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await self._client.update_approval(kind, obj)

    async def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.STRATEGIC_MERGE,
        *,
        subresource: str = "",
    ) -> Object:
        self._check()
        return await self._client.patch(
            kind, namespace, name, patch, patch_type, subresource=subresource
        )

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
        self._check()
        return await self._client.patch_own(
            kind, namespace, name, patch, patch_type, subresource=subresource
        )

    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Object:
        self._check()
        return await self._client.delete(kind, namespace, name, options)

    async def delete_collection(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        options: DeleteOptions | None = None,
    ) -> Object:
        self._check()
        return await self._client.delete_collection(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            options=options,
        )

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        self._check()
        await self._client.bind(pod, node)

    async def evict(self, namespace: str, name: str, options: DeleteOptions | None = None) -> None:
        self._check()
        await self._client.evict(namespace, name, options)

    async def request_token(
        self,
        namespace: str,
        name: str,
        request: Mapping[str, Any],
        *,
        issued_at: float | None = None,
    ) -> Object:
        self._check()
        return await self._client.request_token(namespace, name, request, issued_at=issued_at)

    async def grant_token(
        self, namespace: str, name: str, request: Mapping[str, Any]
    ) -> TokenGrant:
        self._check()
        return await self._client.grant_token(namespace, name, request)

    async def get_scale(self, kind: Kind, namespace: str, name: str) -> Object:
        self._check()
        return await self._client.get_scale(kind, namespace, name)

    async def update_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> Object:
        self._check()
        return await self._client.update_scale(kind, namespace, name, replicas)


def unreachable(node: str) -> StatusError:
    """What a call over a cut link meets."""
    return StatusError(
        504, "Timeout", f"node {node} cannot reach the API server: dial tcp: i/o timeout"
    )
