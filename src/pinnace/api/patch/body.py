"""Decoding a patch request body, for callers that hand over the raw bytes."""

from __future__ import annotations

import json
from typing import Any

import yaml

from pinnace.api.patch.errors import bad_request

RAW = (bytes, bytearray, memoryview)


def json_body(body: Any, prefix: str = "") -> Any:
    """Parsed JSON for raw bytes; anything else is taken as already parsed."""
    if not isinstance(body, RAW):
        return body
    try:
        return json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"{prefix}{_reason(e)}") from None


def yaml_body(body: Any) -> Any:
    """An apply body: YAML or JSON (JSON is YAML)."""
    if not isinstance(body, RAW):
        return body
    try:
        return yaml.safe_load(bytes(body))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise bad_request(f"error decoding YAML: error converting YAML to JSON: {e}") from None


def _reason(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
    return str(e)
