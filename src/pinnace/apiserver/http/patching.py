"""PATCH bodies: parsed by patch type into the document the pipeline's `APIServer.patch`
applies."""

from __future__ import annotations

from typing import Any

from pinnace.api import status
from pinnace.api.decode import NO_REPEATS, Repeats
from pinnace.api.patch import PatchType
from pinnace.apiserver.http import gojson
from pinnace.apiserver.http.bodies import YAMLError, parse_json, yaml_to_json_strict


def parse_patch(data: bytes, patch_type: PatchType, find_repeats: bool) -> tuple[Any, Repeats]:
    """The patch document: JSON, or for apply YAML (read as kube-apiserver reads it: timestamps
    stay strings, excessive aliasing is refused); with what its text repeats when
    `find_repeats` (field validation Warn or Strict: the handler decodes the patch strictly)."""
    if patch_type is PatchType.APPLY:
        try:
            document, yaml_repeats = yaml_to_json_strict(data)
        except YAMLError as e:
            raise status.bad_request(f"error decoding YAML: {e}") from None
        return document, Repeats(yaml=yaml_repeats) if find_repeats else NO_REPEATS
    document = parse_json(data)
    if not find_repeats:
        return document, NO_REPEATS
    return document, Repeats(gojson.duplicate_fields(data, document))
