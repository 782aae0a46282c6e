"""The in-process client: calls the API server's pipeline directly, with no HTTP and no JSON
encoding, and the same results, errors and resourceVersions as over HTTP.

A kind served at a second version (`pinnace.api.versions`: events.k8s.io/v1 Events) is
written and read at that version, converted on the way in and out as the HTTP routes do."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object, meta
from pinnace.api.options import DeleteOptions, ListOptions, WriteOptions
from pinnace.api.versions import ServedVersion, served_version
from pinnace.apiserver import binding, eviction, scale, token_request
from pinnace.apiserver.server import APIServer
from pinnace.client.interface import (
    Client,
    PatchType,
    TokenGrant,
    binding_body,
    eviction_body,
)
from pinnace.clock import Clock


class LocalClient(Client):
    """A client of `server` in the same process.

    `field_manager` names this client's writes in managedFields, as a fieldManager (or
    User-Agent) does over HTTP; empty (the default) records none, which spares a simulation
    the cost of tracking field ownership on every write.
    """

    def __init__(self, server: APIServer, *, field_manager: str = "") -> None:
        self._server = server
        self._field_manager = field_manager
        # The warnings of fieldValidation have nowhere to go in process; Ignore spares a patch
        # the decode that finds them.
        self._write_options = WriteOptions(field_manager=field_manager, field_validation="Ignore")
        self._own_options = replace(self._write_options, decoded=True)
        self._version_options: dict[tuple[str, str, str, bool], WriteOptions] = {}
        """By second version (group, version, resource) and whether the body is the caller's
        own, the write options with the version's rules."""

    @property
    def clock(self) -> Clock:
        return self._server.clock

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        conversion = _conversion(kind)
        if conversion is None:
            return await self._server.get(kind, namespace, name)
        return conversion.from_stored(await self._server.get(conversion.stored, namespace, name))

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
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
        )
        return await self._server.list(kind, namespace, options)

    def watch(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
    ) -> AsyncIterator[Object]:
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
        )
        return self._server.watch(kind, namespace, options)

    async def create(self, kind: Kind, namespace: str, obj: Object) -> Object:
        return await self._create(kind, namespace, obj, self._write_options)

    async def create_own(self, kind: Kind, namespace: str, obj: Object) -> Object:
        return await self._create(kind, namespace, obj, self._own_options)

    async def record_own(self, kind: Kind, namespace: str, obj: Object) -> None:
        conversion = _conversion(kind)
        if conversion is None:
            await self._server.create(kind, namespace, obj, self._own_options)
            return
        options = self._options_at(conversion, self._own_options)
        await self._server.create(conversion.stored, namespace, conversion.to_stored(obj), options)

    async def _create(
        self, kind: Kind, namespace: str, obj: Object, options: WriteOptions
    ) -> Object:
        conversion = _conversion(kind)
        if conversion is None:
            return (await self._server.create(kind, namespace, obj, options)).obj
        stored = conversion.to_stored(obj)
        result = await self._server.create(
            conversion.stored, namespace, stored, self._options_at(conversion, options)
        )
        return conversion.from_stored(result.obj)

    def _options_at(self, conversion: ServedVersion, options: WriteOptions) -> WriteOptions:
        """`options` (this client's own or not) for a write at `conversion`'s version: made once
        per version (a scheduler or kubelet writes every Event at events.k8s.io/v1)."""
        served = conversion.served
        version = (served.group, served.version, served.plural, options.decoded)
        made = self._version_options.get(version)
        if made is None:
            made = self._version_options[version] = conversion.with_rules(options)
        return made

    async def update(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "")

    async def update_own(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "", self._own_options)

    async def update_status(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "status")

    async def update_status_own(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "status", self._own_options)

    async def update_finalize(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "finalize")

    async def update_approval(self, kind: Kind, obj: Object) -> Object:
        return await self._update(kind, obj, "approval")

    async def _update(
        self, kind: Kind, obj: Object, subresource: str, options: WriteOptions | None = None
    ) -> Object:
        m = obj.get("metadata") or {}
        namespace, name = m.get("namespace") or "", m.get("name") or ""
        result = await self._server.update(
            kind, namespace, name, obj, options or self._write_options, subresource
        )
        return result.obj

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
        return await self._patch(
            kind, namespace, name, patch, patch_type, subresource, self._write_options
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
        return await self._patch(
            kind, namespace, name, patch, patch_type, subresource, self._own_options
        )

    async def _patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType,
        subresource: str,
        options: WriteOptions,
    ) -> Object:
        conversion = _conversion(kind)
        if conversion is None:
            result = await self._server.patch(
                kind, namespace, name, patch_type, patch, options, subresource
            )
            return result.obj
        result = await self._server.patch(
            conversion.stored,
            namespace,
            name,
            patch_type,
            patch,
            self._options_at(conversion, options),
            subresource,
            conversion,
        )
        return conversion.from_stored(result.obj)

    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Object:
        return (await self._server.delete(kind, namespace, name, options)).obj

    async def delete_collection(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        options: DeleteOptions | None = None,
    ) -> Object:
        selection = ListOptions(label_selector=label_selector, field_selector=field_selector)
        return await self._server.delete_collection(kind, namespace, selection, options)

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        m = pod["metadata"]
        body = binding_body(pod, node)
        await binding.bind(self._server, m["namespace"], m["name"], body, self._own_options)

    async def evict(self, namespace: str, name: str, options: DeleteOptions | None = None) -> None:
        body = eviction_body(namespace, name, options)
        await eviction.evict(self._server, namespace, name, body)

    async def request_token(
        self,
        namespace: str,
        name: str,
        request: Mapping[str, Any],
        *,
        issued_at: float | None = None,
    ) -> Object:
        server = self._server
        return (await token_request.request_token(server, namespace, name, request, issued_at)).obj

    async def grant_token(
        self, namespace: str, name: str, request: Mapping[str, Any]
    ) -> TokenGrant:
        return await token_request.grant_token(self._server, namespace, name, request, decoded=True)

    async def get_scale(self, kind: Kind, namespace: str, name: str) -> Object:
        return await scale.read_scale(self._server, kind, namespace, name)

    async def update_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> Object:
        def change(current: Object) -> Object:
            # `current` is a fresh Scale; without its resourceVersion it is no precondition.
            meta(current).pop("resourceVersion", None)
            current["spec"] = {"replicas": replicas}
            return current

        result = await scale.update_scale(self._server, kind, namespace, name, change)
        return result.obj


def _conversion(kind: Kind) -> ServedVersion | None:
    """The conversion behind `kind` when it is a second version of a stored kind."""
    return served_version(kind.group, kind.version, kind.plural)
