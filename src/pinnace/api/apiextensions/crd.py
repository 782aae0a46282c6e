"""CustomResourceDefinition (apiextensions.k8s.io/v1): defaulting, the registry strategy and
validation as apiextensions-apiserver v1.32 (apis/apiextensions/v1/defaults.go,
registry/customresourcedefinition/strategy.go and etcd.go's Delete,
apis/apiextensions/validation/validation.go).

The names a CRD asks for are accepted and the CRD established by
`pinnace.apiserver.customresources`, which then serves its kind.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pinnace.api import field
from pinnace.api.apiextensions import schema, schema_rules
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_generic_object_meta, validate_generic_object_meta_update
from pinnace.api.names import is_dns1035_label, is_dns1123_subdomain
from pinnace.api.objects import Object, meta
from pinnace.api.validation import validate_immutable

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
API_APPROVED_ANNOTATION = "api-approved.kubernetes.io"
SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
ESTABLISHED = "Established"
NAMES_ACCEPTED = "NamesAccepted"
TERMINATING = "Terminating"
_SPEC = Path("spec")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def spec_of(crd: Object) -> dict[str, Any]:
    return _dict(crd.get("spec"))


def names_of(crd: Object) -> dict[str, Any]:
    return _dict(spec_of(crd).get("names"))


def versions_of(crd: Object) -> list[dict[str, Any]]:
    return [v for v in _list(spec_of(crd).get("versions")) if isinstance(v, dict)]


def storage_version(crd: Object) -> str:
    return next((str(v.get("name")) for v in versions_of(crd) if v.get("storage")), "")


def condition(crd: Object, kind: str) -> dict[str, Any] | None:
    conditions = _list(_dict(crd.get("status")).get("conditions"))
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == kind), None)


def is_true(crd: Object, kind: str) -> bool:
    found = condition(crd, kind)
    return found is not None and found.get("status") == "True"


def set_condition(crd: Object, new: dict[str, Any], now: str) -> None:
    """SetCRDCondition: replace the condition of its type, keeping its transition time when
    its status stays."""
    # A new status: the one `crd` has may be the stored CRD's (read-only), as on delete.
    status = crd["status"] = dict(crd.get("status") or {})
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == new["type"]), None)
    entry = dict(new)
    entry["lastTransitionTime"] = (
        old.get("lastTransitionTime", now) if old and old.get("status") == new["status"] else now
    )
    if old is None:
        conditions.append(entry)
    else:
        conditions[conditions.index(old)] = entry
    status["conditions"] = conditions


# --- defaulting -------------------------------------------------------------------------------


def default_crd(crd: Object) -> None:
    """SetDefaults_CustomResourceDefinition(Spec): singular, listKind, the conversion
    strategy, and the status's required names."""
    spec = spec_of(crd)
    if not spec:
        return
    names = spec.get("names")
    if isinstance(names, dict):
        if not names.get("singular") and names.get("kind"):
            names["singular"] = str(names["kind"]).lower()
        if not names.get("listKind") and names.get("kind"):
            names["listKind"] = f"{names['kind']}List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif not conversion.get("strategy"):
        conversion["strategy"] = "None"
    status = crd.get("status")
    if isinstance(status, dict):
        accepted = status.setdefault("acceptedNames", {})
        if isinstance(accepted, dict):
            accepted.setdefault("plural", "")
            accepted.setdefault("kind", "")


# --- strategy ---------------------------------------------------------------------------------


def _empty_status(crd: Object) -> dict[str, Any]:
    return {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []}


def _add_stored_version(crd: Object) -> None:
    stored = storage_version(crd)
    status = crd.setdefault("status", _empty_status(crd))
    versions = status.get("storedVersions") or []
    if stored and stored not in versions:
        # A new status and list: an update's status is the stored CRD's (read-only).
        crd["status"] = {**status, "storedVersions": [*versions, stored]}
    elif "storedVersions" not in status:
        crd["status"] = {**status, "storedVersions": versions}


def prepare_for_create(crd: Object) -> None:
    crd["status"] = _empty_status(crd)
    meta(crd)["generation"] = 1
    _add_stored_version(crd)


def prepare_for_update(new: Object, old: Object) -> None:
    new["status"] = old.get("status") or _empty_status(old)
    if new.get("spec") != old.get("spec"):
        meta(new)["generation"] = int(meta(old).get("generation") or 0) + 1
    _add_stored_version(new)


def prepare_for_status_update(new: Object, old: Object) -> None:
    new["spec"] = old.get("spec")
    m, old_m = meta(new), meta(old)
    for kept in ("labels", "annotations", "finalizers", "ownerReferences"):
        if kept in old_m:
            m[kept] = old_m[kept]
        else:
            m.pop(kept, None)


def prepare_for_delete(crd: Object) -> None:
    """What the CRD storage's Delete stores with the deletion timestamp and the cleanup
    finalizer: the Terminating condition."""
    set_condition(
        crd,
        {
            "type": TERMINATING,
            "status": "True",
            "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion "
            "will begin soon",
        },
        str(meta(crd).get("deletionTimestamp") or ""),
    )


# --- validation -------------------------------------------------------------------------------


def _name_rule(crd: Object) -> Any:
    names, group = names_of(crd), spec_of(crd).get("group")

    def rule(name: str) -> list[str]:
        errs = is_dns1123_subdomain(name)
        if name != f"{names.get('plural', '')}.{group or ''}":
            errs = [*errs, 'must be spec.names.plural+"."+spec.group']
        return errs

    return rule


def _names_errors(names: dict[str, Any], path: Path) -> list[FieldError]:
    """ValidateCustomResourceDefinitionNames."""
    errs: list[FieldError] = []
    for key, lower in (("plural", False), ("singular", False), ("kind", True), ("listKind", True)):
        value = str(names.get(key) or "")
        if not value:
            continue
        found = is_dns1035_label(value.lower() if lower else value)
        if found:
            prefix = "may have mixed case, but should otherwise match: " if lower else ""
            errs.append(field.invalid(path.child(key), value, prefix + ",".join(found)))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(_list(names.get(key))):
            found = is_dns1035_label(str(value))
            if found:
                errs.append(field.invalid(path.child(key).index(i), value, ",".join(found)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(
            field.invalid(
                path.child("listKind"), names["listKind"], "kind and listKind may not be the same"
            )
        )
    return errs


def _group_errors(group: str) -> list[FieldError]:
    path = _SPEC.child("group")
    if not group:
        return [field.required(path)]
    found = is_dns1123_subdomain(group)
    if found:
        return [field.invalid(path, group, ",".join(found))]
    if "." not in group:
        return [field.invalid(path, group, "should be a domain with at least one dot")]
    return []


def _schemas(crd: Object) -> list[Any]:
    return [_dict(v.get("schema")).get("openAPIV3Schema") for v in versions_of(crd)]


def _schema_errors(openapi: Any, path: Path, rules: schema_rules.Ratchet) -> list[FieldError]:
    """A version's schema as v1.32 checks it: structure, then (only when it is structural, as
    v1.32 builds the defaults' validators from it) its defaults, then the other rules."""
    errs = schema.structural_errors(openapi, path)
    errs = errs or schema_rules.default_errors(openapi, path)
    return errs + schema_rules.rule_errors(openapi, path, rules)


def _version_errors(crd: Object, rules: schema_rules.Ratchet) -> list[FieldError]:
    path = _SPEC.child("versions")
    versions = versions_of(crd)
    if not versions:
        return [field.required(path, "must have at least one version")]
    errs: list[FieldError] = []
    names: list[str] = []
    subresources_of = []
    for i, version in enumerate(versions):
        name = str(version.get("name") or "")
        found = is_dns1035_label(name)
        if found:
            errs.append(field.invalid(path.index(i).child("name"), name, ",".join(found)))
        names.append(name)
        subresources_of.append(_dict(version.get("subresources")))
        schema_path = path.index(i).child("schema", "openAPIV3Schema")
        errs += _schema_errors(
            _dict(version.get("schema")).get("openAPIV3Schema"), schema_path, rules
        )
        errs += _scale_errors(_dict(version.get("subresources")).get("scale"), path.index(i))
        errs += _column_errors(version.get("additionalPrinterColumns"), path.index(i))
    if len(set(names)) != len(names):
        errs.append(field.invalid(path, names, "must contain unique version names"))
    if sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            field.invalid(path, names, "must have exactly one version marked as storage version")
        )
    if not any(v.get("served") for v in versions):
        errs.append(field.invalid(path, names, "must have at least one served version"))
    return errs


def _column_errors(columns: Any, path: Path) -> list[FieldError]:
    """ValidateCustomResourceColumnDefinition (whose path names the JSONPath field in Go's
    spelling)."""
    errs = []
    types, formats = ",".join(COLUMN_TYPES), ",".join(COLUMN_FORMATS)
    for i, column in enumerate(_list(columns)):
        column, column_path = _dict(column), path.child("additionalPrinterColumns").index(i)
        if not column.get("name"):
            errs.append(field.required(column_path.child("name")))
        column_type = column.get("type")
        if not column_type:
            errs.append(field.required(column_path.child("type"), f"must be one of {types}"))
        elif column_type not in COLUMN_TYPES:
            errs.append(
                field.invalid(column_path.child("type"), column_type, f"must be one of {types}")
            )
        column_format = column.get("format")
        if column_format and column_format not in COLUMN_FORMATS:
            errs.append(
                field.invalid(
                    column_path.child("format"), column_format, f"must be one of {formats}"
                )
            )
        json_path = column.get("jsonPath")
        if not json_path:
            errs.append(field.required(column_path.child("JSONPath")))
        else:
            errs += _simple_json_path_errors(str(json_path), column_path.child("JSONPath"))
        if (column.get("priority") or 0) < 0:
            errs.append(
                field.invalid(
                    column_path.child("priority"), column["priority"], "cannot be negative"
                )
            )
    return errs


def _scale_errors(scale: Any, path: Path) -> list[FieldError]:
    if not isinstance(scale, dict):
        return []
    errs = []
    scale_path = path.child("subresources", "scale")
    for key, under in (("specReplicasPath", ".spec"), ("statusReplicasPath", ".status")):
        value = scale.get(key)
        if not value:
            errs.append(field.required(scale_path.child(key)))
            continue
        found = _simple_json_path_errors(str(value), scale_path.child(key))
        if not found and not str(value).startswith(under + "."):
            found = [
                field.invalid(scale_path.child(key), value, f"should be a json path under {under}")
            ]
        errs += found
    selector = scale.get("labelSelectorPath")
    if selector:
        found = _simple_json_path_errors(str(selector), scale_path.child("labelSelectorPath"))
        if not found and not str(selector).startswith((".spec.", ".status.")):
            detail = "should be a json path under either .spec or .status"
            found = [field.invalid(scale_path.child("labelSelectorPath"), selector, detail)]
        errs += found
    return errs


def _simple_json_path_errors(value: str, path: Path) -> list[FieldError]:
    """validateSimpleJSONPath: a path in dot notation starting with a dot."""
    if not value.startswith("."):
        return [field.invalid(path, value, "must be a simple json path starting with .")]
    return []


def _conversion_errors(conversion: dict[str, Any]) -> list[FieldError]:
    path = _SPEC.child("conversion")
    strategy = conversion.get("strategy")
    if strategy not in ("None", "Webhook"):
        return [field.not_supported(path.child("strategy"), strategy, ["None", "Webhook"])]
    if strategy == "Webhook" and not isinstance(conversion.get("webhook"), dict):
        detail = "required when strategy is set to Webhook"
        return [field.required(path.child("webhook"), detail)]
    if strategy == "None" and conversion.get("webhook") is not None:
        detail = "should not be set when strategy is not set to Webhook"
        return [field.forbidden(path.child("webhook"), detail)]
    return []


def _protected_group(group: str) -> bool:
    """apihelpers.IsProtectedCommunityGroup: the groups of the Kubernetes project."""
    return any(group == d or group.endswith("." + d) for d in ("k8s.io", "kubernetes.io"))


def _approval(crd: Object) -> tuple[str, str]:
    """apihelpers.GetAPIApprovalState: (state, reason) of the api-approved annotation."""
    annotations = meta(crd).get("annotations")
    value = annotations.get(API_APPROVED_ANNOTATION) if isinstance(annotations, dict) else None
    value = value if isinstance(value, str) else ""
    see = "see https://github.com/kubernetes/enhancements/pull/1111"
    if not value:
        return (
            "missing",
            f'protected groups must have approval annotation "{API_APPROVED_ANNOTATION}", {see}',
        )
    if value.startswith("unapproved"):
        return "bypassed", f'not approved: "{value}"'
    url = urlsplit(value) if not any(c.isspace() for c in value) else None
    if url is not None and url.scheme and url.netloc:
        return "approved", f"approved in {value}"
    return "invalid", (
        f'protected groups must have approval annotation "{API_APPROVED_ANNOTATION}" with '
        f'either a URL or a reason starting with "unapproved", {see}'
    )


def _api_approval_errors(new: Object, old: Object | None) -> list[FieldError]:
    """validateAPIApproval: a CRD of a group of the Kubernetes project (`*.k8s.io`,
    `*.kubernetes.io`) needs the api-approved annotation, unless an update leaves its state
    as it was."""
    if not _protected_group(str(spec_of(new).get("group") or "")):
        return []
    state, reason = _approval(new)
    if (old is not None and _approval(old)[0] == state) or state in ("approved", "bypassed"):
        return []
    path = Path("metadata", "annotations").key(API_APPROVED_ANNOTATION)
    if state == "missing":
        return [field.required(path, reason)]
    return [field.invalid(path, meta(new)["annotations"][API_APPROVED_ANNOTATION], reason)]


def validate_crd(crd: Any) -> list[FieldError]:
    errs = _validate_crd(crd, schema_rules.Ratchet())
    return errs + (_api_approval_errors(crd, None) if isinstance(crd, dict) else [])


def _validate_crd(crd: Any, rules: schema_rules.Ratchet) -> list[FieldError]:
    errs = validate_generic_object_meta(crd, namespaced=False, name_rule=_name_rule(_dict(crd)))
    if not isinstance(crd, dict):
        return errs
    spec = spec_of(crd)
    errs += _group_errors(str(spec.get("group") or ""))
    scope = spec.get("scope")
    if not scope:
        errs.append(field.required(_SPEC.child("scope")))
    elif scope not in SCOPES:
        errs.append(field.not_supported(_SPEC.child("scope"), scope, SCOPES))
    errs += _version_errors(crd, rules)
    names = names_of(crd)
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(field.required(_SPEC.child("names", key)))
    errs += _names_errors(names, _SPEC.child("names"))
    errs += _conversion_errors(_dict(spec.get("conversion")))
    accepted = _dict(_dict(crd.get("status")).get("acceptedNames"))
    return errs + _names_errors(accepted, Path("status", "acceptedNames"))


def validate_crd_update(new: Any, old: Any) -> list[FieldError]:
    rules = schema_rules.ratchet(_schemas(old)) if isinstance(old, dict) else schema_rules.Ratchet()
    errs = validate_generic_object_meta_update(new, old) + _validate_crd(new, rules)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    new_spec, old_spec = spec_of(new), spec_of(old)
    if is_true(old, ESTABLISHED):
        errs += validate_immutable(
            new_spec.get("scope"), old_spec.get("scope"), _SPEC.child("scope")
        )
        errs += validate_immutable(
            names_of(new).get("kind"), names_of(old).get("kind"), _SPEC.child("names", "kind")
        )
    errs += validate_immutable(new_spec.get("group"), old_spec.get("group"), _SPEC.child("group"))
    errs += validate_immutable(
        names_of(new).get("plural"), names_of(old).get("plural"), _SPEC.child("names", "plural")
    )
    served = {str(v.get("name")) for v in versions_of(new)}
    stored = _list(_dict(new.get("status")).get("storedVersions"))
    for i, version in enumerate(stored):
        if version not in served:
            path = Path("status", "storedVersions").index(i)
            detail = (
                f"missing from spec.versions; {version} was previously a storage version, and "
                f"must remain in spec.versions until a storage migration ensures no data "
                f"remains persisted in {version} and removes {version} from "
                "status.storedVersions"
            )
            errs.append(field.invalid(path, version, detail))
    return errs + _api_approval_errors(new, old)


def validate_crd_status_update(new: Any, old: Any) -> list[FieldError]:
    accepted = _dict(_dict(_dict(new).get("status")).get("acceptedNames"))
    return validate_generic_object_meta_update(new, old) + _names_errors(
        accepted, Path("status", "acceptedNames")
    )


CUSTOM_RESOURCE_DEFINITION = Kind(
    group="apiextensions.k8s.io",
    version="v1",
    kind="CustomResourceDefinition",
    plural="customresourcedefinitions",
    namespaced=False,
    model="V1CustomResourceDefinition",
    short_names=("crd", "crds"),
    categories=("api-extensions",),
    subresources=("status",),
    default=default_crd,
    prepare_for_create=prepare_for_create,
    prepare_for_update=prepare_for_update,
    prepare_for_status_update=prepare_for_status_update,
    validate=validate_crd,
    validate_update=validate_crd_update,
    validate_status_update=validate_crd_status_update,
    delete_finalizer=CLEANUP_FINALIZER,
    prepare_for_delete=prepare_for_delete,
)
