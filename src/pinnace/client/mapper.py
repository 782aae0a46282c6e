"""What a RESTMapper answers a component (k8s.io/apimachinery/pkg/api/meta's RESTMappings,
client-go's restmapper): the kinds that serve a group and kind, one per version of the group
that serves it, the preferred version first; none when nothing serves it (the caller words
the NoKindMatchError).

`RegistryMapper` answers from the kinds an API server in the same process serves (its
`KindRegistry`, custom resources' too); `DiscoveryMapper` asks discovery over HTTP, as the
DeferredDiscoveryRESTMapper of a `pinnace controller-manager` process does (anew each time,
so a CRD established since is found). The HPA maps its scale target with them, and the
custom metrics client an Object metric's described object.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import quote

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError


class KindMapper(Protocol):
    async def mappings(self, group: str, kind: str) -> list[Kind]:
        """The kinds serving `kind` in `group`, the preferred version first."""
        ...


class RegistryMapper:
    """The mappings of an API server in the same process: the stored kind, which its
    in-process client reads and writes at."""

    def __init__(self, kinds: KindRegistry) -> None:
        self._kinds = kinds

    async def mappings(self, group: str, kind: str) -> list[Kind]:
        found = self._kinds.by_kind(group, kind)
        return [] if found is None else [found]


class PathReader(Protocol):
    async def get_path(self, path: str) -> Object: ...


class DiscoveryMapper:
    """The mappings discovery lists (an `HTTPClient`'s `get_path`)."""

    def __init__(self, client: PathReader) -> None:
        self._client = client

    async def mappings(self, group: str, kind: str) -> list[Kind]:
        found: list[Kind] = []
        for version in await self.versions(group):
            path = f"/apis/{_segment(group)}/{_segment(version)}" if group else "/api/v1"
            for resource in (await self._client.get_path(path)).get("resources") or []:
                name = resource.get("name", "")
                if resource.get("kind") == kind and "/" not in name:
                    namespaced = bool(resource.get("namespaced"))
                    found.append(Kind(group, version, kind, name, namespaced, ""))
        return found

    async def versions(self, group: str) -> list[str]:
        """The versions the server serves `group` at, the preferred one first."""
        if not group:
            return ["v1"]
        try:
            found = await self._client.get_path(f"/apis/{_segment(group)}")
        except StatusError as e:
            if e.code == 404:
                return []
            raise
        preferred = (found.get("preferredVersion") or {}).get("version")
        versions = [v.get("version", "") for v in found.get("versions") or []]
        return sorted(versions, key=lambda v: v != preferred)


def _segment(text: str) -> str:
    return quote(text, safe="")
