"""A Job's `spec.podFailurePolicy`: its defaults and its validation, as Kubernetes v1.32.

Each rule matches a failed pod by its containers' exit codes or by its conditions (exactly
one of the two) and names the action the Job controller takes.
"""

from __future__ import annotations

import json
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_shape import all_containers, as_dict
from pinnace.api.field import ErrorType, FieldError, Path
from pinnace.api.names import is_qualified_name
from pinnace.api.objects import Object
from pinnace.api.validation import (
    GoValue,
    go_address,
    go_struct,
    go_struct_slice,
    is_int,
    list_field,
    object_field,
)

ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
MAX_RULES = 20
MAX_EXIT_CODES = 255
MAX_CONDITION_PATTERNS = 20


def valid_values(values: tuple[str, ...]) -> str:
    """The detail of a Required error that lists what may be given."""
    return "valid values: " + ", ".join(json.dumps(v) for v in values)


def _go_rule(value: Any) -> GoValue:
    rule = as_dict(value)
    given = rule.get("onPodConditions")
    patterns = [
        go_struct(
            "batch.PodFailurePolicyOnPodConditionsPattern",
            [("Type", as_dict(p).get("type", "")), ("Status", as_dict(p).get("status", ""))],
        )
        for p in list_field(given, Path())[0]
    ]
    return go_struct(
        "batch.PodFailurePolicyRule",
        [
            ("Action", rule.get("action", "")),
            (
                "OnExitCodes",
                go_address("batch.PodFailurePolicyOnExitCodesRequirement", rule.get("onExitCodes")),
            ),
            (
                "OnPodConditions",
                go_struct_slice("batch.PodFailurePolicyOnPodConditionsPattern", given, patterns),
            ),
        ],
    )


def go_pod_failure_policy(policy: Any) -> GoValue:
    """The internal batch.PodFailurePolicy as `%#v` prints it."""
    given = as_dict(policy).get("rules")
    rules = [_go_rule(r) for r in list_field(given, Path())[0]]
    return go_struct(
        "batch.PodFailurePolicy",
        [("Rules", go_struct_slice("batch.PodFailurePolicyRule", given, rules))],
    )


def default_pod_failure_policy(policy: Any) -> None:
    """A condition pattern without a status matches the condition being True."""
    for rule in list_field(as_dict(policy).get("rules"), Path())[0]:
        for pattern in list_field(as_dict(rule).get("onPodConditions"), Path())[0]:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"


def validate_pod_failure_policy(spec: Object, path: Path) -> list[FieldError]:
    policy, errs = object_field(spec.get("podFailurePolicy"), path)
    rules, e = list_field(policy.get("rules"), path.child("rules"))
    errs += e
    if len(rules) > MAX_RULES:
        errs.append(field.too_many(path.child("rules"), len(rules), MAX_RULES))
    template_spec = as_dict(as_dict(spec.get("template")).get("spec"))
    containers = {
        c.get("name")
        for kind, _, c in all_containers(template_spec)
        if kind != "ephemeralContainers"
    }
    for i, rule in enumerate(rules):
        errs += _validate_rule(spec, rule, path.child("rules").index(i), containers)
    return errs


def _validate_rule(spec: Object, value: Any, path: Path, containers: set[Any]) -> list[FieldError]:
    rule, errs = object_field(value, path)
    action, action_path = rule.get("action") or "", path.child("action")
    if not action:
        errs.append(field.required(action_path, valid_values(ACTIONS)))
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            detail = "requires the backoffLimitPerIndex to be set"
            errs.append(field.invalid(action_path, action, detail))
    elif action not in ACTIONS:
        errs.append(field.not_supported(action_path, action, ACTIONS))
    on_exit_codes, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if on_exit_codes is not None:
        errs += _validate_on_exit_codes(on_exit_codes, path.child("onExitCodes"), containers)
    if on_conditions:
        errs += _validate_on_pod_conditions(on_conditions, path.child("onPodConditions"))
    if on_exit_codes is not None and on_conditions:
        detail = "specifying both OnExitCodes and OnPodConditions is not supported"
        errs.append(FieldError(ErrorType.INVALID, str(path), detail=detail))
    elif on_exit_codes is None and not on_conditions:
        detail = "specifying one of OnExitCodes and OnPodConditions is required"
        errs.append(FieldError(ErrorType.INVALID, str(path), detail=detail))
    return errs


def _go_int32s(values: list[Any]) -> GoValue:
    return GoValue("[]int32{" + ", ".join(str(v) for v in values) + "}")


def _validate_on_exit_codes(value: Any, path: Path, containers: set[Any]) -> list[FieldError]:
    requirement, errs = object_field(value, path)
    container = requirement.get("containerName")
    if container is not None and container not in containers:
        detail = "must be one of the container or initContainer names in the pod template"
        errs.append(field.invalid(path.child("containerName"), container, detail))
    operator, operator_path = requirement.get("operator") or "", path.child("operator")
    if not operator:
        errs.append(field.required(operator_path, valid_values(OPERATORS)))
    elif operator not in OPERATORS:
        errs.append(field.not_supported(operator_path, operator, OPERATORS))
    values, e = list_field(requirement.get("values"), path.child("values"))
    errs += e
    values_path = path.child("values")
    if not values:
        errs.append(field.invalid(values_path, _go_int32s([]), "at least one value is required"))
    elif len(values) > MAX_EXIT_CODES:
        errs.append(field.too_many(values_path, len(values), MAX_EXIT_CODES))
    else:
        errs += _validate_exit_codes(values, values_path, operator)
    return errs


def _validate_exit_codes(values: list[Any], path: Path, operator: str) -> list[FieldError]:
    """No 0 with In, no duplicates, in ascending order."""
    errs: list[FieldError] = []
    numbers = [v if is_int(v) else 0 for v in values]
    seen: set[int] = set()
    for j, number in enumerate(numbers):
        if operator == "In" and number == 0:
            errs.append(field.invalid(path.index(j), number, "must not be 0 for the In operator"))
        if number in seen:
            errs.append(field.duplicate(path.index(j), number))
        seen.add(number)
    if numbers != sorted(numbers):
        errs.append(field.invalid(path, _go_int32s(numbers), "must be ordered"))
    return errs


def _validate_on_pod_conditions(value: Any, path: Path) -> list[FieldError]:
    patterns, errs = list_field(value, path)
    if len(patterns) > MAX_CONDITION_PATTERNS:
        errs.append(field.too_many(path, len(patterns), MAX_CONDITION_PATTERNS))
    for j, item in enumerate(patterns):
        pattern, e = object_field(item, path.index(j))
        errs += e
        kind, type_path = str(pattern.get("type") or ""), path.index(j).child("type")
        errs += [field.invalid(type_path, kind, m) for m in is_qualified_name(kind)]
        status, status_path = pattern.get("status") or "", path.index(j).child("status")
        if not status:
            errs.append(field.required(status_path, valid_values(CONDITION_STATUSES)))
        elif status not in CONDITION_STATUSES:
            errs.append(field.not_supported(status_path, status, CONDITION_STATUSES))
    return errs
