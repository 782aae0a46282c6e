"""Server-side apply and managedFields bookkeeping on whole objects, as kube-apiserver v1.32's
field manager (apimachinery's util/managedfields) does them: decoding and encoding
`metadata.managedFields`, the fields nobody owns, timestamps, the cap on update managers,
and the errors a client sees.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.patch import errors
from pinnace.api.patch.body import yaml_body
from pinnace.api.patch.created import CreatedFields
from pinnace.api.patch.fieldpath import FieldSet, go_json, path_string
from pinnace.api.patch.managed import (
    UNTRACKED,
    BadManagedFields,
    Entry,
    Managed,
    cap_update_managers,
    decode,
    encode,
    encode_entry,
    identifier,
    printable,
    strip_untracked,
)
from pinnace.api.patch.openapi import Shape, object_shape
from pinnace.api.patch.scalars import check_scalars
from pinnace.api.patch.typed import ValidationErrors, compare, equal, to_field_set
from pinnace.api.patch.updater import Conflicts, apply, update
from pinnace.api.schema import Struct, schema_of
from pinnace.api.status import StatusError

__all__ = ["server_side_apply", "track_update"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CURRENT_OPERATION = identifier("current-operation", "Update", "")

# What a write through each endpoint may not change (the registry strategies' reset
# fields): no one gains or loses ownership of them there.
_IGNORED = {"": FieldSet.of(("f:status",)), "status": FieldSet.of(("f:spec",))}
_NOTHING_IGNORED = FieldSet()
# The fields a create through each endpoint sets, less those it ignores and nobody owns.
_CREATED = {
    subresource: CreatedFields(ignored, UNTRACKED) for subresource, ignored in _IGNORED.items()
}
_CREATED_ELSEWHERE = CreatedFields(_NOTHING_IGNORED, UNTRACKED)


def server_side_apply(
    live: dict[str, Any] | None,
    applied: Any,
    *,
    manager: str,
    force: bool,
    now: str,
    subresource: str = "",
    kind: Any = None,
) -> dict[str, Any]:
    """The object after applying `applied` (a partial object, parsed or raw YAML/JSON
    bytes) as `manager`; `live` is None when the object does not exist yet. `kind` is the
    served `Kind` (by default the one the objects name). Raises the StatusError
    kube-apiserver answers with (400 for a bad body, 409 on conflicts)."""
    applied = yaml_body(applied)
    if applied is None:
        applied = {}
    if not isinstance(applied, dict):
        raise errors.bad_request(
            "error decoding YAML: json: cannot unmarshal "
            f"{_json_kind(applied)} into Go value of type map[string]interface {{}}"
        )
    name = (live or {}).get("kind") or applied.get("kind")
    found = object_shape(name if kind is None else kind)
    gvk = (applied.get("apiVersion"), applied.get("kind"))
    if found is None or gvk != (found[0], name):
        raise errors.bad_request(f"invalid object type: {errors.gvk(applied)}")
    version, shape = found
    if _metadata(applied).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")

    live_object = copy.deepcopy(_without_managed_fields(live or {}))
    try:
        managed = decode(_metadata(live).get("managedFields"))
    except BadManagedFields as e:
        raise errors.unconverted(f"failed to decode managed fields: {e}") from None
    manager_id = identifier(manager, "Apply", version, subresource)

    def run(forced: bool) -> tuple[dict[str, Any], Managed]:
        return apply(
            live_object,
            applied,
            shape,
            managed,
            manager_id,
            version,
            force=forced,
            ignored=_ignored(subresource),
        )

    root = _go_struct(kind)
    try:
        if root is not None:
            check_scalars(applied, root, shape)
        try:
            merged, managed = run(force)
        except Conflicts as e:
            # kubectl taking over from its client-side apply: the fields its last-applied
            # annotation set, still as it set them, are its own (lastAppliedManager).
            allowed = (
                _set_by_client_side_apply(live_object, shape) if manager == "kubectl" else None
            )
            if allowed is None:
                raise
            left = {m: f.difference(allowed) for m, f in e.conflicts.items()}
            left = {m: f for m, f in left.items() if not f.empty()}
            if left:
                raise Conflicts(left) from None
            merged, managed = run(True)
    except ValidationErrors as e:
        raise errors.unconverted(
            f"failed to create typed patch object ({errors.gvknn(applied)}): {e}"
        ) from None
    except Conflicts as e:
        raise conflict_error(e.conflicts) from None
    merged = _without_nulls(merged)
    if equal(merged, live_object):
        merged = live_object
    elif manager_id in managed:
        managed[manager_id] = replace(managed[manager_id], time=now)
    if manager == "kubectl":
        merged = _with_last_applied(merged, applied)
    return _with_managed_fields(merged, cap_update_managers(strip_untracked(managed)))


def _go_struct(kind: Any) -> Struct | None:
    """The Go type of a built-in kind's objects; a custom resource has none."""
    if isinstance(kind, Kind) and not kind.custom:
        return schema_of(kind)
    return None


def _set_by_client_side_apply(live: dict[str, Any], shape: Shape) -> FieldSet | None:
    annotations = _metadata(live).get("annotations") or {}
    try:
        last = json.loads(annotations.get(LAST_APPLIED) or "null")
    except (TypeError, ValueError):
        return None
    if not isinstance(last, dict):
        return None
    changed_since = compare(last, live, shape).modified
    return to_field_set(last, shape, strict=False).difference(changed_since)


def _with_last_applied(obj: Any, applied: dict[str, Any]) -> Any:
    """kubectl's server-side apply keeps a client-side apply annotation, where there is one,
    in step with what it applies (apimachinery's lastAppliedUpdater)."""
    annotations = _metadata(obj).get("annotations")
    if not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return obj
    config = copy.deepcopy(applied)
    config_annotations = _metadata(config).get("annotations")
    if isinstance(config_annotations, dict):
        config_annotations.pop(LAST_APPLIED, None)
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"][LAST_APPLIED] = go_json(_sorted_keys(config)) + "\n"
    return out


def _sorted_keys(value: Any) -> Any:
    """Go encodes a map with its keys in order."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def track_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    operation: str = "Update",
    subresource: str = "",
    now: str,
    kind: Any = None,
) -> dict[str, Any]:
    """`new` with `metadata.managedFields` recording this create, update or patch by
    `manager`: it owns what it set or changed, others lose that. `old` is None on create;
    `kind` is the `Kind` written (by default the one the objects name).
    Never fails: when the entries cannot be worked out, the old ones are kept.

    The result is a new object and metadata; what lies below them is `new`'s own."""
    found = object_shape(new.get("kind") or (old or {}).get("kind") if kind is None else kind)
    api_version = new.get("apiVersion") or (old or {}).get("apiVersion")
    own = getattr(kind, "apply_shape", None) is not None
    if found is not None and not own and not _same_group(api_version, found[0]):
        found = None  # a custom resource's kind named as a built-in one's
    old_entries = _metadata(old).get("managedFields")
    if found is None:
        return _with_entries(new, copy.deepcopy(old_entries))
    version, shape = found
    managed = _starting_entries(old_entries, new, ignore_request=bool(subresource))
    manager_id = identifier(manager, operation, version, subresource)
    new_object = _without_managed_fields(new)
    if old is None and not managed:
        # The one entry a plain create makes, without the general updater's walks.
        fields = _CREATED.get(subresource, _CREATED_ELSEWHERE)(new_object, shape)
        entry = encode_entry(manager_id, version, False, now, fields)
        return _with_entries(new_object, [entry] if fields else None)
    old_object = _without_managed_fields(old or {})
    before = managed.get(manager_id)
    changed_fields, managed = update(
        old_object,
        new_object,
        shape,
        managed,
        _CURRENT_OPERATION,
        ignored=_ignored(subresource),
    )
    changed = strip_untracked({_CURRENT_OPERATION: _entry(changed_fields, version, now)})
    managed = strip_untracked(managed)
    if changed:
        owned = changed[_CURRENT_OPERATION].fields
        if manager_id in managed:
            owned = owned.union(managed[manager_id].fields)
        if before is not None and owned == before.fields:
            owned = before.fields  # as it was: its FieldsV1 is known
        managed[manager_id] = _entry(owned, version, now)
    return _with_managed_fields(new_object, cap_update_managers(managed))


def _same_group(api_version: Any, table_version: str) -> bool:
    """Whether an object's apiVersion is of the group whose shape the table has for its kind
    (any version of it: a patch through a served version tracks the stored one's shape)."""
    if not isinstance(api_version, str):
        return True
    return api_version.rpartition("/")[0] == table_version.rpartition("/")[0]


def conflict_error(conflicts: dict[str, FieldSet]) -> StatusError:
    """409 Conflict naming each field another manager owns (NewConflictError)."""
    found = [
        (manager_id, path)
        for manager_id in sorted(conflicts)
        for path in conflicts[manager_id].paths()
    ]
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {printable(manager_id)}",
            "field": path_string(path),
        }
        for manager_id, path in found
    ]
    if len(found) == 1:
        manager_id, path = found[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {printable(manager_id)}: "
            f"{path_string(path)}"
        )
    else:
        lines = []
        for manager_id in sorted(conflicts):
            lines.append(f"conflicts with {printable(manager_id)}:")
            lines += [f"- {path_string(p)}" for m, p in found if m == manager_id]
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def _starting_entries(old_entries: Any, new: dict[str, Any], *, ignore_request: bool) -> Managed:
    """decodeLiveOrNew: the entries the request carries (`[]` or `[{}]` resets them), else
    the stored ones; undecodable entries count as none."""
    sent = _metadata(new).get("managedFields")
    if not ignore_request:
        if sent == [] or sent == [{}]:
            return {}
        try:
            managed = decode(sent)
        except BadManagedFields:
            managed = {}
        if managed:
            return managed
    try:
        return decode(old_entries)
    except BadManagedFields:
        return {}


def _entry(fields: FieldSet, version: str, now: str) -> Entry:
    return Entry(fields, version, False, now)


def _ignored(subresource: str) -> FieldSet:
    return _IGNORED.get(subresource, _NOTHING_IGNORED)


def _metadata(obj: Any) -> dict[str, Any]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """A new object and metadata without managedFields; what lies below them is shared."""
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        out["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return out


def _with_managed_fields(obj: Any, managed: Managed) -> dict[str, Any]:
    return _with_entries(obj if isinstance(obj, dict) else {}, encode(managed))


def _with_entries(obj: dict[str, Any], entries: Any) -> dict[str, Any]:
    """`obj` (shared below its metadata) with `entries`, which it takes as they are."""
    out = _without_managed_fields(obj)
    if entries:
        metadata = out.get("metadata")
        if not isinstance(metadata, dict):
            metadata = out["metadata"] = {}
        metadata["managedFields"] = entries
    return out


def _without_nulls(value: Any) -> Any:
    """Fields set to null dropped, as decoding into the Go types drops them."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null"
