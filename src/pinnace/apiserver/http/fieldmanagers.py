"""managedFields on writes through HTTP, as kube-apiserver's handlers wrap the registry with
the field manager: every create, update and patch records what its manager set, and server-side
apply (application/apply-patch+yaml) merges the applied configuration by ownership.

A request without `fieldManager` is recorded under its User-Agent's product name
(`kubectl`, `OpenAPI-Generator`), as kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api.objects import Object
from pinnace.api.patch import server_side_apply, track_update
from pinnace.apiserver.http.params import MAX_FIELD_MANAGER_LENGTH

Mutation = Callable[[Object], Object]


def manager_name(field_manager: str, user_agent: str) -> str:
    """The fieldManager given, else the User-Agent up to its first "/"."""
    if field_manager:
        return field_manager
    return user_agent.split("/", 1)[0][:MAX_FIELD_MANAGER_LENGTH]


def tracked(mutation: Mutation, manager: str, subresource: str, now: str) -> Mutation:
    """`mutation` (a patch) that also records `manager`."""

    def mutate(old: Object) -> Object:
        new = mutation(old)
        if not isinstance(new, dict):
            return new
        return track_update(old, new, manager=manager, subresource=subresource, now=now)

    return mutate


def applier(applied: Any, manager: str, force: bool, subresource: str, now: str) -> Mutation:
    """The server-side apply of `applied` by `manager` to the live object."""

    def apply(live: Object) -> Object:
        return server_side_apply(
            live, applied, manager=manager, force=force, now=now, subresource=subresource
        )

    return apply


def apply_create(applied: Any, manager: str, now: str) -> Object:
    """The object an apply creates when there is none yet."""
    return server_side_apply(None, applied, manager=manager, force=False, now=now)
