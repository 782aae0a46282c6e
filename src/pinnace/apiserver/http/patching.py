"""PATCH bodies: parse by content type and turn into the change the pipeline applies to the
stored object (json-patch, merge-patch and strategic-merge-patch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.patch import (
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
)
from pinnace.apiserver.http.bodies import parse_json
from pinnace.apiserver.http.negotiation import BodyType, unsupported_media_type
from pinnace.apiserver.objects import Object

Mutation = Callable[[Object], Object]


def parse_patch(data: bytes, body_type: BodyType) -> Any:
    """The patch document (JSON for every patch type but apply)."""
    if body_type is BodyType.APPLY_PATCH:
        raise unsupported_media_type(
            (
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            )
        )
    return parse_json(data)


def patcher(kind: Kind, body_type: BodyType, patch: Any) -> Mutation:
    """old object -> patched object, for one patch document."""
    if body_type is BodyType.JSON_PATCH:
        return lambda old: apply_json_patch(old, patch)
    if body_type is BodyType.MERGE_PATCH:
        return lambda old: apply_json_merge_patch(old, patch)
    return lambda old: apply_strategic_merge_patch(old, patch, kind)
