"""The kinds an established CustomResourceDefinition serves, as apiextensions-apiserver v1.32's
customresource_handler builds them per version: the strategy of registry/customresource
(strategy.go, validator.go, status_strategy.go), the structural schema's pruning, defaults and
validation (`pinnace.api.apiextensions.schema`), and the table of the version's
additionalPrinterColumns (tableconvertor).

Every served version has a kind; the storage version's is the one stored, the others are
converted with strategy None: only apiVersion changes.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from pinnace.api import catalog
from pinnace.api.apiextensions import fields, schema
from pinnace.api.apiextensions.crd import names_of, spec_of, storage_version, versions_of
from pinnace.api.apps import SCALE_META_FIELDS
from pinnace.api.discovery import version_priority
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind, ScaleReader, ScaleWriter
from pinnace.api.meta import validate_generic_object_meta, validate_generic_object_meta_update
from pinnace.api.objects import Object, meta
from pinnace.api.tables.age import since, timestamp
from pinnace.api.tables.columns import Cell, Column, Printer, Row, name_column, name_of
from pinnace.api.validation import is_int, validate_nonnegative
from pinnace.api.versions import ServedVersion

_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_CUSTOM_MODEL = "CustomResource"
"""A custom resource has no client model; discovery and routing only need this non-empty."""


def _strip_status(obj: Object) -> None:
    obj.pop("status", None)


def _changed_beyond(new: Object, old: Object, skipped: tuple[str, ...]) -> bool:
    keys = (set(new) | set(old)) - set(skipped)
    return any(new.get(k) != old.get(k) for k in keys)


def _served_names(crd: Object) -> dict[str, Any]:
    """The names the CRD is served by: those accepted, once some are."""
    accepted = (crd.get("status") or {}).get("acceptedNames")
    return accepted if isinstance(accepted, dict) and accepted.get("plural") else names_of(crd)


def _make_kind(crd: Object, version: dict[str, Any]) -> Kind:
    names, spec = _served_names(crd), spec_of(crd)
    openapi = (version.get("schema") or {}).get("openAPIV3Schema")
    structural = openapi if isinstance(openapi, dict) else None
    subresources = version.get("subresources") or {}
    has_status = isinstance(subresources.get("status"), dict)
    namespaced = spec.get("scope") == "Namespaced"
    terminating = bool(meta(crd).get("deletionTimestamp"))
    scale = _scale(subresources.get("scale"))
    kept = (
        ("apiVersion", "kind", "metadata", "status")
        if has_status
        else ("apiVersion", "kind", "metadata")
    )

    def default(obj: Object) -> None:
        schema.apply_defaults(obj, structural)

    def prune(obj: Object) -> list[str]:
        return schema.prune(obj, structural)

    def prepare_for_create(obj: Object) -> None:
        if has_status:
            _strip_status(obj)
        meta(obj)["generation"] = 1

    def prepare_for_update(new: Object, old: Object) -> None:
        if has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        generation = int(meta(old).get("generation") or 0)
        meta(new)["generation"] = generation + 1 if _changed_beyond(new, old, kept) else generation

    def prepare_for_status_update(new: Object, old: Object) -> None:
        """The old object with the new status (none if it has none) and managedFields."""
        status, managed = new.get("status"), meta(new).get("managedFields")
        new.clear()
        new.update(copy.deepcopy({k: v for k, v in old.items() if k != "status"}))
        if managed is None:
            meta(new).pop("managedFields", None)
        else:
            meta(new)["managedFields"] = managed
        if status is not None:
            new["status"] = status

    # CEL (celpy, lark) is imported once a CRD is served, not by every process at its start.
    from pinnace.api.apiextensions import validation_rules

    rules = validation_rules.validator(structural)

    def validate(obj: Any, old: Any = None) -> list[FieldError]:
        errs = validate_generic_object_meta(obj, namespaced=namespaced)
        if not isinstance(obj, dict):
            return errs
        errs += schema.validate(obj, structural)
        return errs + validation_rules.validate(rules, obj, old, errs)

    def validate_update(new: Any, old: Any) -> list[FieldError]:
        errs = validate_generic_object_meta_update(new, old)
        return errs + validate(new, old)

    return Kind(
        group=str(spec.get("group")),
        version=str(version.get("name")),
        kind=str(names.get("kind")),
        plural=str(names.get("plural")),
        namespaced=namespaced,
        model=_CUSTOM_MODEL,
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresources=("status",) * has_status + ("scale",) * (scale is not None),
        verbs=_VERBS[1:] if terminating else _VERBS,
        terminating=terminating,
        custom=True,
        selectable_fields=frozenset(
            str(field.get("jsonPath", "")).removeprefix(".")
            for field in version.get("selectableFields") or ()
            if isinstance(field, dict)
        ),
        warning=_deprecation_warning(crd, version),
        default=default,
        prepare_for_create=prepare_for_create,
        prepare_for_update=prepare_for_update,
        prepare_for_status_update=prepare_for_status_update,
        validate=validate,
        validate_update=validate_update,
        validate_status_update=validate_update,
        prune=prune,
        scale=scale,
        printer=printer(version.get("additionalPrinterColumns")),
        apply_shape=fields.object_shape(structural),
        openapi_schema=structural,
    )


def _deprecation_warning(crd: Object, version: dict[str, Any]) -> str:
    """A deprecated version's warning: its own, else "<group>/<version> <Kind> is
    deprecated" naming the most preferred served, undeprecated, newer version to use instead
    (crdHandler's defaultDeprecationWarning)."""
    if not version.get("deprecated"):
        return ""
    if isinstance(version.get("deprecationWarning"), str):
        return str(version["deprecationWarning"])
    group, kind = spec_of(crd).get("group"), names_of(crd).get("kind")
    name = str(version.get("name"))
    warning = f"{group}/{name} {kind} is deprecated"
    newer = [
        str(v.get("name"))
        for v in versions_of(crd)
        if v.get("served")
        and not v.get("deprecated")
        and version_priority(str(v.get("name"))) < version_priority(name)
    ]
    if newer:
        warning += f"; use {group}/{min(newer, key=version_priority)} {kind}"
    return warning


def _steps(json_path: str) -> list[str]:
    return [step for step in json_path.split(".") if step]


def _read(obj: Object, json_path: str) -> Any:
    value: Any = obj
    for step in _steps(json_path):
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _scale(declared: Any) -> tuple[ScaleReader, ScaleWriter] | None:
    """The scale subresource of CustomResourceSubresourceScale's paths (registry/customresource
    scale): replicas read from and written to specReplicasPath, the observed count from
    statusReplicasPath, the selector from labelSelectorPath."""
    if not isinstance(declared, dict):
        return None
    spec_path = str(declared.get("specReplicasPath", ""))
    status_path = str(declared.get("statusReplicasPath", ""))
    selector_path = declared.get("labelSelectorPath")

    def read(obj: Object) -> Object:
        m = meta(obj)
        spec_replicas, status_replicas = _read(obj, spec_path), _read(obj, status_path)
        status: dict[str, Any] = {"replicas": status_replicas if is_int(status_replicas) else 0}
        selector = _read(obj, str(selector_path)) if selector_path else None
        if isinstance(selector, str) and selector:
            status["selector"] = selector
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {k: copy.deepcopy(m[k]) for k in SCALE_META_FIELDS if k in m},
            "spec": {"replicas": spec_replicas} if is_int(spec_replicas) and spec_replicas else {},
            "status": status,
        }

    def write(obj: Object, scale: Any) -> list[FieldError]:
        scale_spec = scale.get("spec") if isinstance(scale, dict) else None
        replicas = scale_spec.get("replicas") if isinstance(scale_spec, dict) else None
        replicas = 0 if replicas is None else replicas
        errs = validate_nonnegative(replicas, Path("spec", "replicas"))
        if errs:
            return errs
        *parents, last = _steps(spec_path)
        target = obj
        for step in parents:
            target = target.setdefault(step, {})
        target[last] = replicas
        return []

    return read, write


def _rewrite(api_version: str) -> Callable[[Object], Object]:
    def convert(obj: Object) -> Object:
        return {**obj, "apiVersion": api_version}

    return convert


def served_kinds(crd: Object) -> tuple[Kind, list[ServedVersion]]:
    """The storage version's kind, and each other served version converted to and from it;
    while the CRD is terminating they take no creates (405)."""
    stored_name = storage_version(crd)
    versions = versions_of(crd)
    stored = _make_kind(crd, next(v for v in versions if v.get("name") == stored_name))
    others = []
    for version in versions:
        if version.get("name") == stored_name or not version.get("served"):
            continue
        served = _make_kind(crd, version)
        others.append(
            ServedVersion(
                served, stored, _rewrite(stored.api_version), _rewrite(served.api_version)
            )
        )
    return stored, others


def built_in(crd: Object) -> bool:
    """Whether a built-in kind has the CRD's group and plural (the VerticalPodAutoscaler's,
    or a `*.k8s.io` one's with the approval annotation): the built-in kind is served and the
    CRD's is not, and deleting the CRD deletes none of the built-in kind's objects, which are
    stored where the CRD's would be."""
    group, plural = spec_of(crd).get("group"), names_of(crd).get("plural")
    return catalog.by_resource(str(group or ""), str(plural or "")) is not None


def stored_served(crd: Object) -> bool:
    """Whether the storage version is also served (it is always stored, served or not)."""
    stored_name = storage_version(crd)
    return any(v.get("served") for v in versions_of(crd) if v.get("name") == stored_name)


# --- additionalPrinterColumns -----------------------------------------------------------------

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def printer(columns: Any) -> Printer:
    """The table of a version's additionalPrinterColumns; without any, NAME and AGE."""
    specs = [c for c in columns or () if isinstance(c, dict)] or [_AGE]
    definitions = (
        name_column(),
        *(
            Column(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("description", "")),
                int(c.get("priority") or 0),
                str(c.get("format", "")),
            )
            for c in specs
        ),
    )
    paths = [(str(c.get("jsonPath", "")), c.get("type", "string")) for c in specs]

    def row(obj: Object, now: float) -> Row:
        cells: list[Cell] = [name_of(obj)]
        for path, kind in paths:
            found = find(obj, path)
            cells.append(_cell(kind, found[0], now) if found else None)
        return Row(cells)

    return Printer(definitions, row)


def _cell(kind: Any, value: Any, now: float) -> Cell:
    """The cell of a column's first value as its declared type admits it (cellForJSONValue): a
    value of another JSON type is left empty, a date that does not parse is `<invalid>`."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return value if isinstance(value, str) else _text(value)
    if kind == "integer":
        return int(value) if is_number else None
    if kind == "number":
        return float(value) if is_number else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date" and isinstance(value, str):
        return since(value, now) if value == "" or timestamp(value) is not None else "<invalid>"
    return None


def _text(value: Any) -> str:
    """A non-string value as client-go's JSONPath prints it: Go's %v for a scalar, JSON (keys
    sorted) for an object or list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def find(obj: Any, path: str) -> list[Any]:
    """The values a printer column's JSONPath selects: `.a.b`, `[0]`, `[*]` and
    `[?(@.type=="Ready")]` steps."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    current = [obj]
    pos = 0
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            return []
        pos = match.end()
        key, index, filter_key, filter_value = match.groups()
        following: list[Any] = []
        for value in current:
            if key is not None and isinstance(value, dict) and key in value:
                following.append(value[key])
            elif index == "*" and isinstance(value, list):
                following += value
            elif index is not None and index != "*" and isinstance(value, list):
                if int(index) < len(value):
                    following.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                following += [
                    item for item in value if _filter_value(item, filter_key) == filter_value
                ]
        current = following
    return [v for v in current if v is not None]


def _filter_value(item: Any, dotted: str) -> Any:
    for step in dotted.split("."):
        item = item.get(step) if isinstance(item, dict) else None
    return item
