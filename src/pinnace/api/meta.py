"""ObjectMeta validation on create and update, as apimachinery's api/validation and the
core group's wrappers around it (which add Kubernetes' own finalizer-name rule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import validate_labels
from pinnace.api.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_good_dns1123_label,
    is_good_dns1123_subdomain,
    is_qualified_name,
)
from pinnace.api.objects import Remembered, plain_json
from pinnace.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    IS_NEGATIVE_ERROR_MSG,
    go_slice,
    go_time,
    is_int,
    list_field,
    object_field,
    string_field,
    string_list,
    string_map,
    type_error,
    validate_immutable,
)

NameRule = Callable[[str], list[str]]

# The yes/no form of the usual name rules, which do not remember what they check: an object's
# name is mostly new on each create (a generated pod name), and only a bad one needs the
# rule's messages.
_GOOD_NAME: dict[NameRule, Callable[[str], bool]] = {
    is_dns1123_subdomain: is_good_dns1123_subdomain,
    is_dns1123_label: is_good_dns1123_label,
}

TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024
FINALIZER_ORPHAN_DEPENDENTS = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
FINALIZER_KUBERNETES = "kubernetes"
_STANDARD_FINALIZERS = frozenset(
    {FINALIZER_KUBERNETES, FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS}
)
# Kinds that may never own another object (group/version, kind).
_BANNED_OWNERS = frozenset({("", "v1", "Event")})

METADATA = Path("metadata")
# Every object's metadata is checked on every write: its fields' paths are made once.
_GENERATE_NAME = METADATA.child("generateName")
_NAME = METADATA.child("name")
_NAMESPACE = METADATA.child("namespace")
_GENERATION = METADATA.child("generation")
_LABELS = METADATA.child("labels")
_ANNOTATIONS = METADATA.child("annotations")
_OWNER_REFERENCES = METADATA.child("ownerReferences")
_FINALIZERS = METADATA.child("finalizers")
_DELETION_TIMESTAMP = METADATA.child("deletionTimestamp")
_MANAGED_FIELDS = METADATA.child("managedFields")
_RESOURCE_VERSION = METADATA.child("resourceVersion")
_IMMUTABLE = tuple(
    (name, METADATA.child(name)) for name in ("name", "namespace", "uid", "creationTimestamp")
)
_DELETION_GRACE_PERIOD = METADATA.child("deletionGracePeriodSeconds")


def metadata_of(obj: Any) -> tuple[dict[str, Any], list[FieldError]]:
    if not isinstance(obj, dict):
        return {}, [type_error(Path(), obj, "object")]
    return object_field(obj.get("metadata"), METADATA)


def is_path_segment_name(name: str) -> list[str]:
    """The rule kube-apiserver applies to every object's name after the kind's own checks
    pass: the name must be usable as one URL path segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{ch}'" for ch in "/%" if ch in name]


def _mask_trailing_dash(name: str) -> str:
    # A generateName prefix may end in '-' because a random suffix follows; apimachinery
    # checks a stand-in name instead (it also drops the character before the dash).
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_object_meta(
    obj: Any, *, namespaced: bool, name_rule: NameRule = is_dns1123_subdomain
) -> list[FieldError]:
    meta, errs = metadata_of(obj)
    generate_name, e = string_field(meta.get("generateName"), _GENERATE_NAME)
    errs += e
    if generate_name:
        path = _GENERATE_NAME
        errs += [
            field.invalid(path, generate_name, m)
            for m in name_rule(_mask_trailing_dash(generate_name))
        ]
    name, e = string_field(meta.get("name"), _NAME)
    errs += e
    if not name:
        errs.append(field.required(_NAME, "name or generateName is required"))
    else:
        good = _GOOD_NAME.get(name_rule)
        if good is None or not good(name):
            errs += [field.invalid(_NAME, name, m) for m in name_rule(name)]

    namespace, e = string_field(meta.get("namespace"), _NAMESPACE)
    errs += e
    if namespaced:
        if not namespace:
            errs.append(field.required(_NAMESPACE))
        else:
            errs += [field.invalid(_NAMESPACE, namespace, m) for m in is_dns1123_label(namespace)]
    elif namespace:
        errs.append(field.forbidden(_NAMESPACE, "not allowed on this type"))

    generation = meta.get("generation")
    if generation is not None:
        if not is_int(generation):
            errs.append(type_error(_GENERATION, generation, "integer"))
        elif generation < 0:
            errs.append(field.invalid(_GENERATION, generation, IS_NEGATIVE_ERROR_MSG))
    return errs + _validate_common(meta)


def validate_object_meta_update(new: Any, old: Any) -> list[FieldError]:
    """Metadata rules on update: identity is immutable, and an object being deleted takes
    no new finalizers."""
    new_meta, errs = metadata_of(new)
    old_meta, _ = metadata_of(old)
    if not isinstance(old_meta, dict):
        old_meta = {}

    if old_meta.get("deletionTimestamp") is not None:
        new_finalizers, _ = string_list(new_meta.get("finalizers"), METADATA)
        old_finalizers, _ = string_list(old_meta.get("finalizers"), METADATA)
        added = sorted(set(new_finalizers) - set(old_finalizers))
        if added:
            shown = "[]string{" + ", ".join(f'"{f}"' for f in added) + "}"
            errs.append(
                field.forbidden(
                    _FINALIZERS,
                    "no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {shown}",
                )
            )

    if not new_meta.get("resourceVersion"):
        errs.append(
            field.invalid(
                _RESOURCE_VERSION,
                new_meta.get("resourceVersion") or "",
                "must be specified for an update",
            )
        )
    new_generation = new_meta.get("generation") or 0
    old_generation = old_meta.get("generation") or 0
    if is_int(new_generation) and is_int(old_generation) and new_generation < old_generation:
        errs.append(field.invalid(_GENERATION, new_generation, "must not be decremented"))
    for name, path in _IMMUTABLE:
        errs += validate_immutable(new_meta.get(name) or "", old_meta.get(name) or "", path)
    new_deletion = new_meta.get("deletionTimestamp")
    if new_deletion != old_meta.get("deletionTimestamp"):
        errs.append(
            field.invalid(_DELETION_TIMESTAMP, go_time(new_deletion), FIELD_IMMUTABLE_ERROR_MSG)
        )
    errs += validate_immutable(
        new_meta.get("deletionGracePeriodSeconds"),
        old_meta.get("deletionGracePeriodSeconds"),
        _DELETION_GRACE_PERIOD,
    )
    return errs + _validate_common(new_meta)


_COMMON_FIELDS = ("labels", "annotations", "ownerReferences", "finalizers", "managedFields")
_REMEMBERED_FIELDS = _COMMON_FIELDS[:-1]
"""What `_common_errors` is keyed by: not managedFields, whose check reads two strings of
each entry, where writing its text would walk every entry's fieldsV1."""
_MAX_REMEMBERED_TEXT = 4096
"""Longer texts (a kubectl last-applied annotation) are one object's."""
_common_errors: Remembered[tuple[FieldError, ...]] = Remembered(1 << 14, only_returning=True)
"""By the JSON text of the metadata fields `_validate_common` reads but managedFields, what
it found, once the same text comes again: the objects of one workload share their labels,
annotations and owners. Each node's Node and Lease have their own (a hostname label, the
Node as the Lease's owner), validated again at every heartbeat: room for those of 5,000
nodes and more, or each renewal misses and pushes out the workloads' entries. Texts seen
once (a pod's own usage annotation) are not kept: at this size they would hold tens of
MiB."""


def _validate_common(meta: dict[str, Any]) -> list[FieldError]:
    if meta.keys().isdisjoint(_COMMON_FIELDS):  # an Event's, a Binding's: nothing to check
        return []
    managed = _validate_managed_fields(meta.get("managedFields"), _MANAGED_FIELDS)
    text = plain_json([meta.get(name) for name in _REMEMBERED_FIELDS])
    if text is None or len(text) > _MAX_REMEMBERED_TEXT:
        return _common_errors_of(meta) + managed
    known = _common_errors.get(text)
    if known is None:
        known = tuple(_common_errors_of(meta))
        if _common_errors.returning(text):
            _common_errors.put(text, known)
    return [*known, *managed]


def _common_errors_of(meta: dict[str, Any]) -> list[FieldError]:
    """The errors of the fields `_common_errors` remembers (managedFields' come after)."""
    labels, errs = string_map(meta.get("labels"), _LABELS)
    errs += validate_labels(labels, _LABELS)
    annotations, e = string_map(meta.get("annotations"), _ANNOTATIONS)
    errs += e + validate_annotations(annotations, _ANNOTATIONS)
    errs += validate_owner_references(meta.get("ownerReferences"), _OWNER_REFERENCES)
    errs += validate_finalizers(meta.get("finalizers"), _FINALIZERS)
    return errs


def annotations_size(annotations: dict[str, str]) -> int:
    """Their total size as validation limits it: keys and values in UTF-8."""
    return sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())


def validate_annotations(annotations: dict[str, str], path: Path) -> list[FieldError]:
    errs = []
    for k in annotations:
        # Annotation keys are qualified names in any letter case.
        errs += [field.invalid(path, k, m) for m in is_qualified_name(k.lower())]
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        errs.append(field.too_long(path, "", TOTAL_ANNOTATION_SIZE_LIMIT_BYTES))
    return errs


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def validate_owner_references(value: Any, path: Path) -> list[FieldError]:
    refs, errs = list_field(value, path)
    first_controller = ""
    for i, ref in enumerate(refs):
        ref, e = object_field(ref, path.index(i))
        if e:
            errs += e
            continue
        strings = {}
        for key in ("apiVersion", "kind", "name", "uid"):
            strings[key], e = string_field(ref.get(key), path.child(key))
            errs += e
        group, version = _split_api_version(strings["apiVersion"])
        if not version:
            errs.append(
                field.invalid(
                    path.child("apiVersion"), strings["apiVersion"], "version must not be empty"
                )
            )
        for key in ("kind", "name", "uid"):
            if not strings[key]:
                errs.append(field.invalid(path.child(key), strings[key], "must not be empty"))
        if (group, version, strings["kind"]) in _BANNED_OWNERS:
            errs.append(
                field.invalid(
                    path,
                    ref,
                    f"{group}/{version}, Kind={strings['kind']} is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{strings['kind']}/{strings['name']}"
            if first_controller:
                errs.append(
                    field.invalid(
                        path,
                        refs,
                        "Only one reference can have Controller set to true. "
                        f'Found "true" in references for {first_controller} and {current}',
                    )
                )
            else:
                first_controller = current
    return errs


def validate_finalizers(value: Any, path: Path) -> list[FieldError]:
    """Finalizer names: qualified names, and a name without a '/' must be one Kubernetes
    defines; `orphan` and `foregroundDeletion` exclude each other."""
    finalizers, errs = string_list(value, path)
    for finalizer in finalizers:
        errs += [field.invalid(path, finalizer, m) for m in is_qualified_name(finalizer)]
    if FINALIZER_ORPHAN_DEPENDENTS in finalizers and FINALIZER_DELETE_DEPENDENTS in finalizers:
        errs.append(
            field.invalid(
                path,
                go_slice("string", finalizers),
                f"finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} "
                "cannot be both set",
            )
        )
    # The core group's wrapper adds its own rule, reported by index.
    for i, finalizer in enumerate(finalizers):
        if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
            errs.append(_not_standard_finalizer(path.index(i), finalizer))
    return errs


_NOT_STANDARD_FINALIZER = "name is neither a standard finalizer name nor is it fully qualified"


def _not_standard_finalizer(path: Path, name: str) -> FieldError:
    return field.invalid(path, name, _NOT_STANDARD_FINALIZER)


def _validate_managed_fields(value: Any, path: Path) -> list[FieldError]:
    entries, errs = list_field(value, path)
    for i, entry in enumerate(entries):
        entry, e = object_field(entry, path.index(i))
        errs += e
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            errs.append(
                field.invalid(
                    path.index(i).child("operation"), operation, "must be `Apply` or `Update`"
                )
            )
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            errs.append(
                field.invalid(path.index(i).child("fieldsType"), fields_type, "must be `FieldsV1`")
            )
    return errs


def validate_finalizer_name(name: str, path: Path) -> list[FieldError]:
    """One finalizer name, both rules reported at `path` (as a namespace's spec.finalizers)."""
    errs = [field.invalid(path, name, m) for m in is_qualified_name(name)]
    if "/" not in name and name not in _STANDARD_FINALIZERS:
        errs.append(_not_standard_finalizer(path, name))
    return errs


def _core_finalizer_rule(error: FieldError) -> bool:
    return error.detail == _NOT_STANDARD_FINALIZER and error.field.startswith(str(_FINALIZERS))


def validate_generic_object_meta(
    obj: Any, *, namespaced: bool, name_rule: NameRule = is_dns1123_subdomain
) -> list[FieldError]:
    """apimachinery's ValidateObjectMeta, as apiextensions-apiserver validates CRDs and custom
    resources with it: without the core group's rule that a finalizer name without a '/' be
    one Kubernetes defines."""
    errs = validate_object_meta(obj, namespaced=namespaced, name_rule=name_rule)
    return [e for e in errs if not _core_finalizer_rule(e)]


def validate_generic_object_meta_update(new: Any, old: Any) -> list[FieldError]:
    """apimachinery's ValidateObjectMetaUpdate (see `validate_generic_object_meta`)."""
    return [e for e in validate_object_meta_update(new, old) if not _core_finalizer_rule(e)]
