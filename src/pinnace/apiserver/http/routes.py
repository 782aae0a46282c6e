"""Which API path a request names, as kube-apiserver's installer lays its routes out:

- `/api`, `/apis`, `/apis/<group>`, `/api/v1`, `/apis/<group>/<version>`: discovery;
- `<prefix>/<resource>[/<name>[/<subresource>]]` for cluster-scoped kinds, and for lists and
  watches of a namespaced kind across all namespaces;
- `<prefix>/namespaces/<namespace>/<resource>[/<name>[/<subresource>]]`;
- `<prefix>/watch/...`: the deprecated watch paths, the same with `watch=true`.

A path that names nothing served is a 404 with kube-apiserver's wording.
"""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Remembered
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError, path_not_found
from pinnace.api.versions import ServedVersion


def not_found() -> StatusError:
    return path_not_found()


def method_not_allowed() -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


@dataclass(frozen=True)
class Discovery:
    """A discovery document: `group` None for /api and /apis (`core` tells which), a group
    alone for /apis/<group>, a group and version for a resource list."""

    core: bool
    group: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class ResourceTarget:
    kind: Kind
    namespace: str
    """"" for cluster-scoped kinds, and for namespaced kinds listed across namespaces."""
    name: str = ""
    subresource: str = ""
    watch_path: bool = False
    """Reached through the deprecated `/watch/` prefix."""
    conversion: ServedVersion | None = None
    """Set when the path names the kind at a version other than the stored one."""

    @property
    def collection(self) -> bool:
        return not self.name


Route = Discovery | ResourceTarget


def find(path: str, kinds: KindRegistry | None = None) -> Route | None:
    """The discovery document or resource `path` names among `kinds` (the catalog's when
    None); None when it names nothing served (the request metrics ask of every path, most of
    those outside /api and /apis)."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        if len(parts) == 1:
            return Discovery(core=True)
        if parts[1] != "v1":
            return None
        group, version, rest = "", "v1", parts[2:]
    else:
        if len(parts) == 1:
            return Discovery(core=False)
        if len(parts) == 2:
            return Discovery(core=False, group=parts[1])
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return Discovery(core=not group, group=group, version=version)
    return _resource(group, version, rest, kinds)


ROUTES_REMEMBERED = 4096
"""Paths whose routes `Routes` keeps (a path naming an object is as many as its objects)."""


class Routes:
    """`find` among one registry's kinds, remembered by path until what it serves changes
    (its `changes` move): the controllers, kubelets and clients of a cluster ask of the same
    few paths over and over, and a route is worked out from a path and the kinds alone."""

    def __init__(self, kinds: KindRegistry, size: int = ROUTES_REMEMBERED) -> None:
        self._kinds = kinds
        self._size = size
        self._changes = kinds.changes
        self._found: Remembered[Route] = Remembered(size)

    def find(self, path: str) -> Route | None:
        if self._kinds.changes != self._changes:
            self._changes = self._kinds.changes
            self._found = Remembered(self._size)
        found = self._found.get(path)
        if found is None:
            found = find(path, self._kinds)
            if found is not None:
                self._found.put(path, found)
        return found


_BUILT_IN = KindRegistry()
"""The catalog's kinds only, for a path looked up without a server's registry."""


def _resource(
    group: str, version: str, rest: list[str], kinds: KindRegistry | None
) -> ResourceTarget | None:
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
        if not rest:
            return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespaces = catalog.kind("", "namespaces")
        is_namespace_subresource = (
            not group and len(rest) == 3 and rest[2] in namespaces.subresources
        )
        if not is_namespace_subresource:
            namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    found = (kinds or _BUILT_IN).at_version(group, version, rest[0])
    if found is None:
        return None
    kind, conversion = found
    if namespace and not kind.namespaced:
        return None
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and watch_path:
        return None
    if subresource and subresource not in kind.subresources and not kind.custom:
        return None  # a custom resource's answers as its object's NotFound (check_served)
    if kind.namespaced and name and not namespace:
        return None  # a namespaced object is only reachable inside its namespace
    return ResourceTarget(kind, namespace, name, subresource, watch_path, conversion)
