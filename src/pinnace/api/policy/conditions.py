"""Validation of `metav1.Condition` lists (apimachinery's ValidateConditions), which a
PodDisruptionBudget's status carries. Generic: move it beside `pinnace.api.meta` once another
kind needs it."""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import validate_label_name
from pinnace.api.names import regex_error
from pinnace.api.validation import is_int, list_field, object_field

STATUSES = ("False", "True", "Unknown")
MAX_REASON_LENGTH = 1024
MAX_MESSAGE_LENGTH = 32 * 1024
_REASON_FORMAT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON = re.compile(_REASON_FORMAT)
_REASON_ERROR = regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
    _REASON_FORMAT,
    "my_name",
    "MY_NAME",
    "MyName",
    "ReasonA,ReasonB",
    "ReasonA:ReasonB",
)


def validate_conditions(value: Any, path: Path) -> list[FieldError]:
    """Each condition well formed, and no condition type twice."""
    conditions, errs = list_field(value, path)
    seen: set[str] = set()
    for i, item in enumerate(conditions):
        condition, e = object_field(item, path.index(i))
        errs += e
        kind = condition.get("type")
        if isinstance(kind, str) and kind in seen:
            errs.append(field.duplicate(path.index(i).child("type"), kind))
        seen.add(kind if isinstance(kind, str) else "")
        errs += _validate_condition(condition, path.index(i))
    return errs


def _validate_condition(condition: dict[str, Any], path: Path) -> list[FieldError]:
    kind = condition.get("type")
    errs = validate_label_name(kind if isinstance(kind, str) else "", path.child("type"))
    status = condition.get("status") or ""
    if status not in STATUSES:
        errs.append(field.not_supported(path.child("status"), status, STATUSES))
    generation = condition.get("observedGeneration")
    if is_int(generation) and generation < 0:
        detail = "must be greater than or equal to zero"
        errs.append(field.invalid(path.child("observedGeneration"), generation, detail))
    if not condition.get("lastTransitionTime"):
        errs.append(field.required(path.child("lastTransitionTime"), "must be set"))
    reason = condition.get("reason") or ""
    if not reason:
        errs.append(field.required(path.child("reason"), "must be set"))
    else:
        if not isinstance(reason, str) or not _REASON.fullmatch(reason):
            errs.append(field.invalid(path.child("reason"), reason, _REASON_ERROR))
        elif len(reason) > MAX_REASON_LENGTH:
            errs.append(field.too_long(path.child("reason"), reason, MAX_REASON_LENGTH))
    message = condition.get("message")
    if isinstance(message, str) and len(message) > MAX_MESSAGE_LENGTH:
        errs.append(field.too_long(path.child("message"), message, MAX_MESSAGE_LENGTH))
    return errs
