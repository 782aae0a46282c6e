"""Which changes an informer's handler acts on, so that the informer hands it no other.

client-go's shared informers call every handler with every change, and most of a controller's
handlers look at a change and drop it: a pod controlled by a Job is nothing to the ReplicaSet
controller, a pod without claims nothing to the volume controllers, a pod in a namespace
without Services nothing to the endpoints controllers. A handler registered with an `Interest`
is called only with the changes that meet it, and is left out of the others: what it would
have done with them is nothing, so nothing anyone can observe differs (which handlers act, in
what order, and what they do are client-go's), but the change costs only its interested
handlers. An interest must therefore hold of every change the handler does something with.

An interest is a list of requirements, each met by any of its conditions: `Holds` (a key of
the object is among some values, such as its namespace among those another informer's cache
holds objects in), `Fact` (a test is true of it), and `Changed` (an update that changes one of
some keys; adds and deletes always meet it). The informer works out each key and condition of
a change once, for all its handlers (`Change`), when the first handler that asks would be
called: a condition that reads another cache reads what the handler would have read.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable
from dataclasses import dataclass
from typing import Any

from pinnace.api.objects import Object

Key = Callable[[Object], Any]
"""Something about an object a condition looks at (hashable for `Holds`)."""


class Change:
    """One notification's objects (one, or of an update the old and the new) and what the
    conditions weighed of them so far: each key worked out once, whichever handlers ask."""

    __slots__ = ("_held", "_keys", "objs", "update")

    def __init__(self, what: str, objs: tuple[Object, ...]) -> None:
        self.update = what == "on_update"
        self.objs = objs
        self._keys: dict[Key, tuple[Any, ...]] = {}
        self._held: dict[Condition, bool] = {}

    def keys(self, key: Key) -> tuple[Any, ...]:
        """`key` of each object of the change."""
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = tuple(map(key, self.objs))
        return found

    def meets(self, interest: Interest) -> bool:
        """Whether the change meets every requirement of `interest`; its `namespaces` are the
        caller's to weigh first (the informer does, before it makes a `Change`)."""
        held = self._held
        for requirement in interest.requirements:
            for condition in requirement:
                met = held.get(condition)
                if met is None:
                    met = held[condition] = condition.holds(self)
                if met:
                    break
            else:
                return False
        return True


@dataclass(frozen=True, eq=False)
class Holds:
    """Met when `key` of the object (of an update: of the old or the new one) is among
    `values`, which may change as the handler's informers do (a live view of a cache)."""

    key: Callable[[Object], Hashable]
    values: Container[Hashable]

    def holds(self, change: Change) -> bool:
        keys, values = change.keys(self.key), self.values
        return keys[0] in values or (len(keys) == 2 and keys[1] in values)


@dataclass(frozen=True, eq=False)
class Fact:
    """Met when `test` is true of the object (of an update: of the old or the new one)."""

    test: Callable[[Object], object]

    def holds(self, change: Change) -> bool:
        return any(change.keys(self.test))


@dataclass(frozen=True, eq=False)
class Changed:
    """Met by an update that changes one of `keys` (compared with ==), and by every add and
    delete."""

    keys: tuple[Key, ...]

    def holds(self, change: Change) -> bool:
        if not change.update:
            return True
        for key in self.keys:
            old, new = change.keys(key)
            if old != new:
                return True
        return False


Condition = Holds | Fact | Changed


@dataclass(frozen=True, eq=False)
class Interest:
    """Met by a change of an object of `namespaces` (a live view; None: any) that meets every
    requirement, each by one of its conditions."""

    namespaces: Container[Hashable] | None
    requirements: tuple[tuple[Condition, ...], ...]


def interest(*requirements: Condition | tuple[Condition, ...]) -> Interest:
    """`Interest` of the requirements given, a condition alone or any of a tuple of them. A
    first requirement of `in_namespaces` alone becomes the interest's `namespaces`, which the
    informer weighs at once of every change (the cheapest and most often decisive)."""
    groups = tuple(r if isinstance(r, tuple) else (r,) for r in requirements)
    if groups and len(groups[0]) == 1:
        (first,) = groups[0]
        if isinstance(first, Holds) and first.key is namespace_of:
            return Interest(first.values, groups[1:])
    return Interest(None, groups)


def namespace_of(obj: Object) -> str:
    return obj["metadata"].get("namespace") or ""


def in_namespaces(namespaces: Container[str]) -> Holds:
    """Met by an object of one of `namespaces` (`Informer.namespaces`: those another cache
    holds objects in, for a handler that looks only at objects of the changed one's namespace
    in that cache)."""
    return Holds(namespace_of, namespaces)
