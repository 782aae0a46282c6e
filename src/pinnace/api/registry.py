"""The kinds one API server serves: the catalog's built-in kinds, which never change, and the
kinds added and removed at run time (those of established CustomResourceDefinitions), one
registry per API server so two clusters in one process never share them.

Routing, the API server's lookups and discovery ask the registry; code that names a built-in
kind keeps asking `pinnace.api.catalog`. When an added kind is removed, or replaced by kinds
made from a different definition, the registry says so (the API server then ends the watches
on it, as apiextensions-apiserver v1.32's crdHandler destroys a CRD's old storage in
removeDeadStorage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.versions import ServedVersion, other_versions, served_version


@dataclass(frozen=True)
class _Added:
    stored: Kind
    served: bool
    """Whether the stored version is served too (a CRD may store a version it no longer
    serves)."""
    others: tuple[ServedVersion, ...]
    source: Any


class KindRegistry:
    def __init__(self, gone: Callable[[Kind], None] | None = None) -> None:
        """`gone(kind)`: called with an added stored kind removed or replaced."""
        self._added: dict[str, _Added] = {}
        self._gone = gone
        self.generation = 0
        """Counts the changes of what is added: what is derived from it (the published
        OpenAPI documents) is made again when it moves."""
        self.changes = 0
        """Counts every add and remove, a kind replaced by one from the same source too (a
        CRD being deleted is served terminating): a kind looked up here before (an HTTP
        route) is the one served now for as long as this stays."""

    def add(
        self,
        owner: str,
        stored: Kind,
        others: Sequence[ServedVersion],
        *,
        served: bool = True,
        source: Any = None,
    ) -> None:
        """Serve `stored` and `others` for `owner` (a CRD's name), replacing what it served.
        `source`: what they were made from (a CRD's spec and accepted names); kinds from a
        different source replace the previous ones, which are then gone."""
        previous = self._added.get(owner)
        self._added[owner] = _Added(stored, served, tuple(others), source)
        self.changes += 1
        if previous is None or previous.source != source:
            self.generation += 1
        if previous is not None and previous.source != source:
            self._went(previous.stored)

    def remove(self, owner: str) -> None:
        previous = self._added.pop(owner, None)
        if previous is not None:
            self.generation += 1
            self.changes += 1
            self._went(previous.stored)

    def _went(self, kind: Kind) -> None:
        if self._gone is not None:
            self._gone(kind)

    def added(self, owner: str) -> Kind | None:
        """The stored kind `owner` serves, if any."""
        found = self._added.get(owner)
        return None if found is None else found.stored

    def added_kinds(self) -> tuple[Kind, ...]:
        """Every kind added at run time, as stored (for the controllers that go through every
        kind: namespace deletion, garbage collection)."""
        return tuple(a.stored for a in self._added.values())

    def by_resource(self, group: str, plural: str) -> Kind | None:
        """The stored kind behind a URL's group and resource."""
        found = catalog.by_resource(group, plural)
        if found is not None:
            return found
        for added in self._added.values():
            if (added.stored.group, added.stored.plural) == (group, plural):
                return added.stored
        return None

    def by_kind(self, group: str, kind: str) -> Kind | None:
        """The stored kind served as `kind` in `group` at any version: a RESTMapper's mapping
        of a group and kind (RESTMapping without versions), as the custom metrics client
        resolves an object metric's described object."""
        for found in catalog.kinds():
            if (found.group, found.kind) == (group, kind):
                return found
        for added in self._added.values():
            stored = added.stored
            if (stored.group, stored.kind) == (group, kind) and (added.served or added.others):
                return stored
        return None

    def at_version(
        self, group: str, version: str, plural: str
    ) -> tuple[Kind, ServedVersion | None] | None:
        """The stored kind served at `group`/`version`/`plural`, with the conversion when that
        version is not the stored one."""
        found = catalog.by_resource(group, plural)
        if found is not None and found.version == version:
            return found, None
        other = served_version(group, version, plural)
        if other is not None:
            return other.stored, other
        for added in self._added.values():
            stored = added.stored
            if (stored.group, stored.plural) != (group, plural):
                continue
            if stored.version == version and added.served:
                return stored, None
            for conversion in added.others:
                if conversion.served.version == version:
                    return stored, conversion
        return None

    def added_served(self) -> tuple[Kind, ...]:
        """Every kind added at run time at every version it is served at."""
        added: list[Kind] = []
        for entry in self._added.values():
            added += [entry.stored] if entry.served else []
            added += [c.served for c in entry.others]
        return tuple(added)

    def discovery_kinds(self) -> tuple[Kind, ...]:
        """Every kind at every version it is served at, for discovery."""
        return catalog.kinds() + other_versions() + self.added_served()
