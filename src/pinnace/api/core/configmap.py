"""ConfigMap (v1): validation as Kubernetes v1.32 (no defaults, nothing to prepare)."""

from __future__ import annotations

import binascii
from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_config_map_key
from pinnace.api.validation import string_map

MAX_CONFIG_MAP_SIZE = 1024 * 1024
"""data and binaryData together, in bytes (binaryData counted decoded)."""

_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def _decoded_size(encoded: str) -> int:
    try:
        return len(binascii.a2b_base64(encoded))
    except (binascii.Error, ValueError):  # not base64: decoding has refused it already
        return len(encoded)


def validate_config_map(cm: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(cm, namespaced=True)
    data, e = string_map(cm.get("data"), Path("data"))
    errs += e
    binary, e = string_map(cm.get("binaryData"), Path("binaryData"))
    errs += e
    total = 0
    for key, value in data.items():
        path = Path("data").key(key)
        errs += [field.invalid(path, key, m) for m in is_config_map_key(key)]
        if key in binary:
            errs.append(field.invalid(path, key, "duplicate of key present in binaryData"))
        total += len(value.encode())
    for key, value in binary.items():
        path = Path("binaryData").key(key)
        errs += [field.invalid(path, key, m) for m in is_config_map_key(key)]
        total += _decoded_size(value)
    if total > MAX_CONFIG_MAP_SIZE:
        errs.append(field.too_long(Path(), "", MAX_CONFIG_MAP_SIZE))
    return errs


def validate_config_map_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(field.forbidden(Path("immutable"), _IMMUTABLE_WHEN_SET))
        for key in ("data", "binaryData"):
            # An empty map and an absent one are the same once stored.
            if (new.get(key) or {}) != (old.get(key) or {}):
                errs.append(field.forbidden(Path(key), _IMMUTABLE_WHEN_SET))
    return errs + validate_config_map(new)


CONFIG_MAP = Kind(
    group="",
    version="v1",
    kind="ConfigMap",
    plural="configmaps",
    namespaced=True,
    model="V1ConfigMap",
    short_names=("cm",),
    validate=validate_config_map,
    validate_update=validate_config_map_update,
)
