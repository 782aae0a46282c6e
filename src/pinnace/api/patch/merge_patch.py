"""JSON merge patch (RFC 7386, application/merge-patch+json) as kube-apiserver applies it.

kube-apiserver uses evanphx/json-patch v4 `MergePatch`, which differs from the RFC in two
small ways kept here: nulls are also pruned from objects nested inside inserted arrays, and a
top-level array patch replaces the document (which then fails to decode as an object).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pinnace.api import field
from pinnace.api.patch.body import json_body
from pinnace.api.patch.errors import bad_request
from pinnace.api.status import StatusError, invalid

__all__ = ["apply_json_merge_patch", "create_json_merge_patch"]


def apply_json_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """`obj` with the merge patch applied; neither argument is modified. The result shares
    with `obj` what the patch leaves alone (only the objects on a patched path are copied).

    `patch` is the decoded body (or the raw bytes). A null or scalar patch is a 400
    "Invalid JSON Patch"; an array patch is a 422, as the handler fails to decode it.
    """
    patch = json_body(patch)
    if isinstance(patch, list):
        raise _not_an_object(patch)
    if not isinstance(patch, dict):
        raise bad_request("Invalid JSON Patch")
    return _merge_object(obj, patch)


def create_json_merge_patch(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that turns `original` into `modified` (as kubectl computes one)."""
    patch: dict[str, Any] = {}
    for key in original.keys() - modified.keys():
        patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(original[key], dict):
            sub = create_json_merge_patch(original[key], value)
            if sub:
                patch[key] = sub
        elif not _same(original[key], value):
            patch[key] = copy.deepcopy(value)
    return patch


def _merge_object(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """evanphx's mergeDocs: an object merges into an object, anything else replaces (with its
    nulls pruned, but for an array replacing an object: taken as it is)."""
    merged = dict(doc)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):
            current = merged.get(key)
            if isinstance(current, dict):
                merged[key] = _merge_object(current, value)
            else:
                merged[key] = _pruned_object(value)
        elif isinstance(value, list):
            if isinstance(merged.get(key), dict):
                merged[key] = copy.deepcopy(value)
            else:
                merged[key] = _pruned_array(value)
        else:
            merged[key] = value
    return merged


def _pruned_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy without null members, at any depth (arrays keep null items). It calls down
    only into objects and arrays: most values of a patch (of every pod status patch) are
    scalars, taken as they are without a call each."""
    pruned = {}
    for key, value in obj.items():
        if value is None:
            continue
        if isinstance(value, dict):
            value = _pruned_object(value)
        elif isinstance(value, list):
            value = _pruned_array(value)
        pruned[key] = value
    return pruned


def _pruned_array(array: list[Any]) -> list[Any]:
    """`_pruned_object` of an array: its null items kept."""
    return [
        _pruned_object(v) if isinstance(v, dict) else _pruned_array(v) if isinstance(v, list) else v
        for v in array
    ]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _not_an_object(patched: Any) -> StatusError:
    detail = (
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go "
        'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
        'Kind string "json:\\"kind,omitempty\\"" }'
    )
    rendered = json.dumps(patched, separators=(",", ":"))
    return invalid("", "", [field.invalid("patch", rendered, detail)])
