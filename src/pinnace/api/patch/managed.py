"""metadata.managedFields: decoding and encoding the entries, the identifiers that tell
managers apart, and the cap on update managers (apimachinery's util/managedfields/internal).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from pinnace.api.objects import Remembered, plain_json
from pinnace.api.patch.fieldpath import FieldSet, go_json

__all__ = [
    "BadManagedFields",
    "Entry",
    "Managed",
    "cap_update_managers",
    "decode",
    "encode",
    "encode_entry",
    "identifier",
    "printable",
    "strip_untracked",
]

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"

# Fields nobody owns (apimachinery's stripMetaManager): exactly these paths, not what is
# below them, so `metadata.labels` stays owned while `metadata` itself does not.
UNTRACKED = FieldSet.of(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *(
        ("f:metadata", "f:" + name)
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    ),
)


@dataclass(frozen=True)
class Entry:
    fields: FieldSet
    api_version: str
    applied: bool
    time: str | None = None


Managed = dict[str, Entry]
"""Entries by manager identifier."""


@lru_cache(maxsize=1024)
def identifier(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """BuildManagerIdentifier: the JSON of an entry without fields, time, and (for appliers)
    apiVersion, so one applier is one manager whatever version it applies."""
    entry: dict[str, str] = {"manager": manager} if manager else {}
    entry["operation"] = operation
    if operation == "Update" and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return go_json(entry)


def printable(manager_id: str) -> str:
    """How conflict messages name a manager: `"kubectl" with subresource "status" using v1`."""
    entry = json.loads(manager_id)
    text = json.dumps(entry.get("manager", ""), ensure_ascii=False)
    if entry.get("subresource"):
        text += f" with subresource {json.dumps(entry['subresource'], ensure_ascii=False)}"
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion', '')}"
    return text


class BadManagedFields(ValueError):
    pass


def decode(entries: Any) -> Managed:
    if not entries:
        return {}
    if not isinstance(entries, list):
        raise BadManagedFields("managedFields must be a list")
    managed: Managed = {}
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise BadManagedFields("managedFields entries must be objects")
        for name in ("manager", "operation", "apiVersion", "time", "fieldsType", "subresource"):
            if not isinstance(entry.get(name, ""), str):
                raise BadManagedFields(f"managedFields entry {n}: {name} must be a string")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise BadManagedFields("operation must be `Apply` or `Update`")
        if not entry.get("apiVersion"):
            raise BadManagedFields("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if not fields_type:
            raise BadManagedFields(f"missing fieldsType in managed fields entry {n}")
        if fields_type != "FieldsV1":
            raise BadManagedFields(
                f"invalid fieldsType {go_json(fields_type)} in managed fields entry {n}"
            )
        manager_id = identifier(
            entry.get("manager", ""), operation, entry["apiVersion"], entry.get("subresource", "")
        )
        try:
            fields = _decoded(entry.get("fieldsV1") or {})
        except ValueError as e:
            raise BadManagedFields(f"error decoding versioned set from {manager_id}: {e}") from None
        managed[manager_id] = Entry(
            fields, entry["apiVersion"], operation == "Apply", entry.get("time")
        )
    return managed


# An object's entries are decoded and encoded again on each of its writes, and most of them
# are what they were (as are the entries of the objects of one template): the sets are known
# by their FieldsV1 text, and the text of a set encoded before by the set (sets are not
# changed once built).
_MAX_REMEMBERED_TEXT = 16384
_sets: Remembered[FieldSet] = Remembered(1024)
"""By FieldsV1 text, the set it holds."""
_texts: Remembered[tuple[FieldSet, bytes]] = Remembered(1024)
"""By the identity of a set (kept alive with it), its FieldsV1 text."""


def _decoded(fields_v1: Any) -> FieldSet:
    """The set a FieldsV1 value holds; ValueError when it is not one."""
    text = plain_json(fields_v1)
    if text is None or len(text) > _MAX_REMEMBERED_TEXT:
        return FieldSet.from_fields_v1(fields_v1)
    fields = _sets.get(text)
    if fields is None:
        fields = FieldSet.from_fields_v1(fields_v1)
        _sets.put(text, fields)
    return fields


def _encoded(fields: FieldSet) -> dict[str, Any]:
    """The FieldsV1 value of a set, a new one each time."""
    known = _texts.get(id(fields))
    if known is not None and known[0] is fields:
        found: dict[str, Any] = orjson.loads(known[1])
        return found
    fields_v1 = fields.to_fields_v1()
    text = orjson.dumps(fields_v1)
    if len(text) <= _MAX_REMEMBERED_TEXT:
        _texts.put(id(fields), (fields, text))
        _sets.put(text, fields)
    return fields_v1


def strip_untracked(managed: Managed) -> Managed:
    """Managers without the untracked fields; those left owning nothing are dropped."""
    out: Managed = {}
    for manager_id, entry in managed.items():
        fields = entry.fields.difference(UNTRACKED)
        if not fields.empty():
            out[manager_id] = entry if fields is entry.fields else replace(entry, fields=fields)
    return out


def encode_entry(
    manager_id: str, api_version: str, applied: bool, time: str | None, fields_v1: dict[str, Any]
) -> dict[str, Any]:
    """One managedFields entry as it is stored."""
    manager, subresource = _named(manager_id)
    out: dict[str, Any] = {}
    if manager:
        out["manager"] = manager
    out["operation"] = "Apply" if applied else "Update"
    out["apiVersion"] = api_version
    if time:
        out["time"] = time
    out["fieldsType"] = "FieldsV1"
    out["fieldsV1"] = fields_v1
    if subresource:
        out["subresource"] = subresource
    return out


@lru_cache(maxsize=1024)
def _named(manager_id: str) -> tuple[Any, Any]:
    """The manager and subresource an identifier names (the same few write every object)."""
    who = json.loads(manager_id)
    return who.get("manager"), who.get("subresource")


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    entries = [
        encode_entry(
            manager_id, entry.api_version, entry.applied, entry.time, _encoded(entry.fields)
        )
        for manager_id, entry in managed.items()
    ]
    entries.sort(
        key=lambda e: (
            e["operation"],
            _seconds(e.get("time")),
            e.get("manager", ""),
            e["apiVersion"],
            e.get("subresource", ""),
        )
    )
    return entries or None


def _seconds(time: str | None) -> float:
    if not time:
        return 0
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def cap_update_managers(managed: Managed) -> Managed:
    """Merge the oldest update entries into one `ancient-changes` entry per apiVersion until
    at most 10 update entries are left."""
    updaters = [m for m, e in managed.items() if not e.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    managed = dict(managed)
    updaters.sort(key=lambda m: (_seconds(managed[m].time), m))
    first_by_version: dict[str, str] = {}
    count = len(updaters)
    for manager_id in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[manager_id]
        version = entry.api_version
        bucket = identifier(ANCIENT_CHANGES, "Update", version)
        if version not in first_by_version:
            first_by_version[version] = manager_id
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first_by_version[version])
        managed[bucket] = replace(
            entry, fields=entry.fields.union(managed[bucket].fields), time=entry.time
        )
        del managed[manager_id]
        count -= 1
    return managed
