"""A Job's `spec.successPolicy`, validated as Kubernetes v1.32 (validateSuccessPolicy).

Only an Indexed Job may have one; each rule names the indexes that must succeed, how many,
or both, within the Job's completions.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.batch.indexes import IndexesError, count_indexes
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.objects import Object
from pinnace.api.validation import (
    GoValue,
    go_address,
    go_struct,
    go_struct_slice,
    is_int,
    list_field,
    object_field,
    validate_nonnegative,
)

MAX_RULES = 20
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024


def go_success_policy(policy: Any) -> GoValue:
    """The internal batch.SuccessPolicy as `%#v` prints it."""
    given = as_dict(policy).get("rules")
    rules = [
        go_struct(
            "batch.SuccessPolicyRule",
            [
                ("SucceededIndexes", go_address("string", as_dict(r).get("succeededIndexes"))),
                ("SucceededCount", go_address("int32", as_dict(r).get("succeededCount"))),
            ],
        )
        for r in list_field(given, Path())[0]
    ]
    return go_struct(
        "batch.SuccessPolicy", [("Rules", go_struct_slice("batch.SuccessPolicyRule", given, rules))]
    )


def validate_success_policy(spec: Object, path: Path) -> list[FieldError]:
    """The rules of an Indexed Job's success policy (the caller checks the mode)."""
    policy, errs = object_field(spec.get("successPolicy"), path)
    rules_path = path.child("rules")
    rules, e = list_field(policy.get("rules"), rules_path)
    errs += e
    if not rules:
        detail = "at least one rules must be specified when the successPolicy is specified"
        errs.append(field.required(rules_path, detail))
    if len(rules) > MAX_RULES:
        errs.append(field.too_many(rules_path, len(rules), MAX_RULES))
    completions = spec.get("completions")
    for i, rule in enumerate(rules):
        errs += _validate_rule(rule, rules_path.index(i), completions)
    return errs


def _validate_rule(value: Any, path: Path, completions: Any) -> list[FieldError]:
    rule, errs = object_field(value, path)
    indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
    if indexes is None and count is None:
        detail = "at least one of succeededCount or succeededIndexes must be specified"
        errs.append(field.required(path, detail))
    if not is_int(completions):
        return errs  # Indexed without completions: already an error of its own
    total = 0
    if isinstance(indexes, str):
        indexes_path = path.child("succeededIndexes")
        if len(indexes) > MAX_SUCCEEDED_INDEXES_LENGTH:
            errs.append(field.too_long(indexes_path, indexes, MAX_SUCCEEDED_INDEXES_LENGTH))
        try:
            total = count_indexes(indexes, completions)
        except IndexesError as parse_error:
            detail = f"error parsing succeededIndexes: {parse_error}"
            errs.append(field.invalid(indexes_path, indexes, detail))
    if is_int(count):
        count_path = path.child("succeededCount")
        errs += validate_nonnegative(count, count_path)
        if count > completions:
            detail = (
                f"must be less than or equal to {completions} (the number of specified completions)"
            )
            errs.append(field.invalid(count_path, count, detail))
        if indexes is not None and count > total:
            detail = (
                f"must be less than or equal to {total} "
                "(the number of indexes in the specified succeededIndexes field)"
            )
            errs.append(field.invalid(count_path, count, detail))
    return errs
