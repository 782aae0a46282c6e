"""Validation of a PodSpec's scheduling constraints: node selector, tolerations, node and pod
(anti-)affinity, topology spread constraints and scheduling gates."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_fields import (
    object_items,
    read_dict,
    read_int,
    read_list,
    read_str,
    string_items,
    well_formed_selector,
)
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import validate_label_name, validate_label_selector, validate_labels
from pinnace.api.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)
from pinnace.api.validation import string_map, type_error

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NOT_POSITIVE = "must be greater than zero"


def validate_node_selector(node_selector: Any, path: Path) -> list[FieldError]:
    """spec.nodeSelector: a map of label keys to label values."""
    labels, errs = string_map(node_selector, path)
    return errs + validate_labels(labels, path)


def validate_tolerations(tolerations: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    items, e = _as_items(tolerations, path)
    errs += e
    for i, tol in items:
        p = path.index(i)
        key = read_str(tol, "key", p, errs)
        operator = read_str(tol, "operator", p, errs)
        value = read_str(tol, "value", p, errs)
        effect = read_str(tol, "effect", p, errs)
        seconds = tol.get("tolerationSeconds")
        if key:
            errs += validate_label_name(key, p.child("key"))
        if not key and operator != "Exists":
            errs.append(
                field.invalid(
                    p.child("operator"),
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all '
                    'values and all keys"',
                )
            )
        if seconds is not None and effect != "NoExecute":
            errs.append(
                field.invalid(
                    p.child("effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(field.invalid(p.child("operator"), value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(
                    field.invalid(
                        p.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(field.not_supported(p.child("operator"), operator, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(field.not_supported(p.child("effect"), effect, TAINT_EFFECTS))
        read_int(tol, "tolerationSeconds", p, errs)
    return errs


def validate_scheduling_gates(gates: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    items, e = _as_items(gates, path)
    errs += e
    seen: set[str] = set()
    for i, gate in items:
        name = read_str(gate, "name", path.index(i), errs)
        errs += [field.invalid(path.index(i), name, m) for m in is_qualified_name(name)]
        if name in seen:
            errs.append(field.duplicate(path.index(i), name))
        seen.add(name)
    return errs


def validate_affinity(affinity: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if affinity is None:
        return errs
    if not isinstance(affinity, dict):
        return [type_error(path, affinity, "object")]
    if affinity.get("nodeAffinity") is not None:
        errs += _validate_node_affinity(
            read_dict(affinity, "nodeAffinity", path, errs), path.child("nodeAffinity")
        )
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind) is not None:
            errs += _validate_pod_affinity(read_dict(affinity, kind, path, errs), path.child(kind))
    return errs


def validate_node_selector_terms(selector: dict[str, Any], path: Path) -> list[FieldError]:
    """A NodeSelector (required node affinity): at least one term, each term valid."""
    errs: list[FieldError] = []
    terms_path = path.child("nodeSelectorTerms")
    terms = read_list(selector, "nodeSelectorTerms", path, errs)
    if not terms:
        errs.append(field.required(terms_path, "must have at least one node selector term"))
        return errs
    for i, term in object_items(terms, terms_path, errs):
        errs += _validate_node_selector_term(term, terms_path.index(i), allow_invalid_values=False)
    return errs


def _validate_node_affinity(node_affinity: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    if node_affinity.get(required_key) is not None:
        required = read_dict(node_affinity, required_key, path, errs)
        errs += validate_node_selector_terms(required, path.child(required_key))
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    preferred_path = path.child(preferred_key)
    for i, term in object_items(
        read_list(node_affinity, preferred_key, path, errs), preferred_path, errs
    ):
        p = preferred_path.index(i)
        errs += _validate_weight(term, p)
        preference = read_dict(term, "preference", p, errs)
        # Preferred terms accept any value: they may still match on a one-node cluster.
        errs += _validate_node_selector_term(
            preference, p.child("preference"), allow_invalid_values=True
        )
    return errs


def _validate_weight(term: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    weight = read_int(term, "weight", path, errs)
    if "weight" not in term or (weight is not None and not 1 <= weight <= 100):
        errs.append(field.invalid(path.child("weight"), weight or 0, "must be in the range 1-100"))
    return errs


def _validate_node_selector_term(
    term: dict[str, Any], path: Path, *, allow_invalid_values: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    exprs_path = path.child("matchExpressions")
    for j, req in object_items(read_list(term, "matchExpressions", path, errs), exprs_path, errs):
        errs += _validate_node_selector_requirement(req, exprs_path.index(j), allow_invalid_values)
    fields_path = path.child("matchFields")
    for j, req in object_items(read_list(term, "matchFields", path, errs), fields_path, errs):
        errs += _validate_node_field_requirement(req, fields_path.index(j))
    return errs


def _validate_node_selector_requirement(
    req: dict[str, Any], path: Path, allow_invalid_values: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    key = read_str(req, "key", path, errs)
    operator = read_str(req, "operator", path, errs)
    values = [
        v for _, v in string_items(read_list(req, "values", path, errs), path.child("values"), errs)
    ]
    values_path = path.child("values")
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(
                field.required(values_path, "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                field.forbidden(
                    values_path,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                field.required(
                    values_path, "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errs.append(
            field.invalid(path.child("operator"), operator, "not a valid selector operator")
        )
    errs += validate_label_name(key, path.child("key"))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs += [
                field.invalid(values_path.index(i), value, m) for m in is_valid_label_value(value)
            ]
    return errs


def _validate_node_field_requirement(req: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    key = read_str(req, "key", path, errs)
    operator = read_str(req, "operator", path, errs)
    values = [
        v for _, v in string_items(read_list(req, "values", path, errs), path.child("values"), errs)
    ]
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(
                field.required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' "
                    "for node field selector",
                )
            )
    else:
        errs.append(
            field.invalid(path.child("operator"), operator, "not a valid selector operator")
        )
    if key != "metadata.name":
        errs.append(field.invalid(path.child("key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs += [
                field.invalid(path.child("values").index(i), value, m)
                for m in is_dns1123_subdomain(value)
            ]
    return errs


def _validate_pod_affinity(affinity: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    required_path = path.child(required_key)
    for i, term in object_items(read_list(affinity, required_key, path, errs), required_path, errs):
        errs += validate_pod_affinity_term(term, required_path.index(i))
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    preferred_path = path.child(preferred_key)
    for i, weighted in object_items(
        read_list(affinity, preferred_key, path, errs), preferred_path, errs
    ):
        p = preferred_path.index(i)
        errs += _validate_weight(weighted, p)
        term = read_dict(weighted, "podAffinityTerm", p, errs)
        errs += validate_pod_affinity_term(term, p.child("podAffinityTerm"))
    return errs


def validate_pod_affinity_term(term: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    selector = None
    if term.get("labelSelector") is not None:
        selector = well_formed_selector(term["labelSelector"], path.child("labelSelector"), errs)
        errs += validate_label_selector(selector, path.child("labelSelector"))
    if term.get("namespaceSelector") is not None:
        ns_selector = well_formed_selector(
            term["namespaceSelector"], path.child("namespaceSelector"), errs
        )
        errs += validate_label_selector(ns_selector, path.child("namespaceSelector"))
    namespaces = read_list(term, "namespaces", path, errs)
    for _, name in string_items(namespaces, path.child("namespaces"), errs):
        # Kubernetes reports these under the singular "namespace".
        errs += [field.invalid(path.child("namespace"), name, m) for m in is_dns1123_label(name)]
    match_keys = _string_list(term, "matchLabelKeys", path, errs)
    mismatch_keys = _string_list(term, "mismatchLabelKeys", path, errs)
    errs += _validate_label_keys(match_keys, path.child("matchLabelKeys"), selector)
    errs += _validate_label_keys(mismatch_keys, path.child("mismatchLabelKeys"), selector)
    for i, key in enumerate(match_keys):
        if key in mismatch_keys:
            errs.append(
                field.invalid(
                    path.child("matchLabelKeys").index(i),
                    key,
                    "exists in both matchLabelKeys and mismatchLabelKeys",
                )
            )
    topology_key = read_str(term, "topologyKey", path, errs)
    if not topology_key:
        errs.append(field.required(path.child("topologyKey"), "can not be empty"))
    return errs + validate_label_name(topology_key, path.child("topologyKey"))


def _validate_label_keys(
    keys: list[str], path: Path, selector: dict[str, Any] | None
) -> list[FieldError]:
    if not keys:
        return []
    if selector is None:
        return [field.forbidden(path, "must not be specified when labelSelector is not set")]
    errs: list[FieldError] = []
    for i, key in enumerate(keys):
        errs += validate_label_name(key, path.index(i))
    return errs


def validate_topology_spread_constraints(constraints: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    items, e = _as_items(constraints, path)
    errs += e
    seen: list[tuple[Any, Any]] = [
        (c.get("topologyKey"), c.get("whenUnsatisfiable")) for _, c in items
    ]
    for n, (i, c) in enumerate(items):
        p = path.index(i)
        max_skew = read_int(c, "maxSkew", p, errs)
        if max_skew is None or max_skew <= 0:
            errs.append(field.invalid(p.child("maxSkew"), max_skew or 0, NOT_POSITIVE))
        topology_key = read_str(c, "topologyKey", p, errs)
        if not topology_key:
            errs.append(field.required(p.child("topologyKey"), "can not be empty"))
        action = read_str(c, "whenUnsatisfiable", p, errs)
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                field.not_supported(
                    p.child("whenUnsatisfiable"), action, ("DoNotSchedule", "ScheduleAnyway")
                )
            )
        if (topology_key, action) in seen[n + 1 :]:
            errs.append(
                field.duplicate(
                    p.child("{topologyKey, whenUnsatisfiable}"), f"{{{topology_key}, {action}}}"
                )
            )
        if c.get("minDomains") is not None:
            min_domains = read_int(c, "minDomains", p, errs)
            if min_domains is not None and min_domains <= 0:
                errs.append(field.invalid(p.child("minDomains"), min_domains, NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(
                    field.invalid(
                        p.child("minDomains"),
                        c.get("minDomains"),
                        f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
                    )
                )
        for policy_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy_name) is not None:
                policy = read_str(c, policy_name, p, errs)
                if policy not in ("Honor", "Ignore"):
                    errs.append(
                        field.not_supported(p.child(policy_name), policy, ("Honor", "Ignore"))
                    )
        selector = None
        if c.get("labelSelector") is not None:
            selector = well_formed_selector(c["labelSelector"], p.child("labelSelector"), errs)
        errs += _validate_spread_match_label_keys(
            _string_list(c, "matchLabelKeys", p, errs), p.child("matchLabelKeys"), selector
        )
        errs += validate_label_selector(selector, p.child("labelSelector"))
    return errs


def _validate_spread_match_label_keys(
    keys: list[str], path: Path, selector: dict[str, Any] | None
) -> list[FieldError]:
    if not keys:
        return []
    errs: list[FieldError] = []
    selector_keys: set[str] = set()
    if selector is None:
        errs.append(field.forbidden(path, "must not be specified when labelSelector is not set"))
    else:
        selector_keys.update(selector["matchLabels"])
        selector_keys.update(expr["key"] for expr in selector["matchExpressions"])
    for i, key in enumerate(keys):
        errs += validate_label_name(key, path.index(i))
        if key in selector_keys:
            errs.append(
                field.invalid(path.index(i), key, "exists in both matchLabelKeys and labelSelector")
            )
    return errs


def _string_list(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> list[str]:
    items = read_list(obj, key, path, errs)
    return [v for _, v in string_items(items, path.child(key), errs)]


def _as_items(value: Any, path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[FieldError]]:
    errs: list[FieldError] = []
    if value is None:
        return [], errs
    if not isinstance(value, list):
        return [], [type_error(path, value, "array")]
    return object_items(value, path, errs), errs
