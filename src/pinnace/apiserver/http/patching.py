"""PATCH bodies: parsed by patch type into the document the pipeline's `APIServer.patch`
applies."""

from __future__ import annotations

from typing import Any

from pinnace.api import status
from pinnace.api.patch import PatchType
from pinnace.apiserver.http.bodies import YAMLError, parse_json, yaml_to_json


def parse_patch(data: bytes, patch_type: PatchType) -> Any:
    """The patch document: JSON, or for apply YAML (read as kube-apiserver reads it: timestamps
    stay strings, excessive aliasing is refused)."""
    if patch_type is PatchType.APPLY:
        try:
            return yaml_to_json(data)
        except YAMLError as e:
            raise status.bad_request(f"error decoding YAML: {e}") from None
    return parse_json(data)
