"""PATCH bodies: parse by content type and turn into the change the pipeline applies to the
stored object (json-patch, merge-patch and strategic-merge-patch; apply is in
`fieldmanagers`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api import status
from pinnace.api.decode import decode
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.patch import (
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
)
from pinnace.apiserver.http.bodies import YAMLError, parse_json, yaml_to_json
from pinnace.apiserver.http.negotiation import BodyType

Mutation = Callable[[Object], Object]


def parse_patch(data: bytes, body_type: BodyType) -> Any:
    """The patch document: JSON, or for apply YAML (read as kube-apiserver reads it: timestamps
    stay strings, excessive aliasing is refused)."""
    if body_type is BodyType.APPLY_PATCH:
        try:
            return yaml_to_json(data)
        except YAMLError as e:
            raise status.bad_request(f"error decoding YAML: {e}") from None
    return parse_json(data)


def patcher(kind: Kind, body_type: BodyType, patch: Any) -> Mutation:
    """old object -> patched object, for a json, merge or strategic merge patch."""
    if body_type is BodyType.JSON_PATCH:
        return lambda old: apply_json_patch(old, patch)
    if body_type is BodyType.MERGE_PATCH:
        return lambda old: apply_json_merge_patch(old, patch)
    return lambda old: apply_strategic_merge_patch(old, patch, kind)


def validated(kind: Kind, mutation: Mutation, validation: str, warnings: list[str]) -> Mutation:
    """`mutation`, with the patched object's unknown fields checked as fieldValidation says:
    refused (Strict, 400), reported into `warnings` (Warn) or let go (Ignore)."""
    if validation == "Ignore":
        return mutation

    def mutate(old: Object) -> Object:
        new = mutation(old)
        if isinstance(new, dict):
            warnings[:] = decode(new, kind, strict=validation == "Strict").warnings
        return new

    return mutate
