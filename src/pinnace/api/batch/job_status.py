"""What a write to a Job's status may do, as Kubernetes v1.32 checks it.

Besides non-negative counters, v1.32 guards the transitions a Job controller makes: a Job
that finished stays finished, its completion time is set once and not before its start,
and a finished Job has no active pods. (v1.32 also demands the FailureTarget and
SuccessCriteriaMet conditions before Failed and Complete; Pinnace does not enforce those.)
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import STATUS, Object, counter, validate_nonnegative_fields
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.field import ErrorType, FieldError
from pinnace.api.validation import go_time, list_field
from pinnace.clock.rfc3339 import parse_time

COUNTERS = ("active", "succeeded", "failed", "ready", "terminating")
TERMINAL_CONDITIONS = ("Failed", "Complete", "FailureTarget")


def condition_true(status: Object, kind: str) -> bool:
    conditions = list_field(status.get("conditions"), STATUS)[0]
    return any(
        as_dict(c).get("type") == kind and as_dict(c).get("status") == "True" for c in conditions
    )


def is_finished(status: Object) -> bool:
    return condition_true(status, "Complete") or condition_true(status, "Failed")


def _timestamp(text: Any) -> float | None:
    try:
        return parse_time(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _omitted(path: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, str(path), detail=detail)


def _validate_uncounted(status: Object) -> list[FieldError]:
    """The uids of terminated pods not yet counted: none empty, none twice."""
    path = STATUS.child("uncountedTerminatedPods")
    uncounted = as_dict(status.get("uncountedTerminatedPods"))
    errs: list[FieldError] = []
    seen: set[str] = set()
    for name in ("succeeded", "failed"):
        for i, uid in enumerate(list_field(uncounted.get(name), path.child(name))[0]):
            item = path.child(name).index(i)
            if not uid:
                errs.append(
                    field.invalid(item, uid if uid is not None else "", "must not be empty")
                )
            elif uid in seen:
                errs.append(field.duplicate(item, uid))
            else:
                seen.add(uid)
    return errs


def validate_job_status(new: Object, old: Object) -> list[FieldError]:
    """validateJobStatus and ValidateJobStatusUpdate (new and old are the Jobs)."""
    status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    errs = validate_nonnegative_fields(status, STATUS, COUNTERS) + _validate_uncounted(status)
    if condition_true(status, "Complete") and condition_true(status, "Failed"):
        detail = "cannot set Complete=True and Failed=true conditions"
        errs.append(_omitted(STATUS.child("conditions"), detail))
    for kind in TERMINAL_CONDITIONS:
        if condition_true(old_status, kind) and not condition_true(status, kind):
            detail = f"cannot disable the terminal {kind}=True condition"
            errs.append(_omitted(STATUS.child("conditions"), detail))
    finished, finished_changed = is_finished(status), is_finished(status) != is_finished(old_status)
    active = counter(status, "active")
    if finished and active > 0 and (finished_changed or active != counter(old_status, "active")):
        detail = "active>0 is invalid for finished job"
        errs.append(field.invalid(STATUS.child("active"), active, detail))
    start_changed = status.get("startTime") != old_status.get("startTime")
    if finished and status.get("startTime") is None and (finished_changed or start_changed):
        detail = "startTime is required for finished job"
        errs.append(field.required(STATUS.child("startTime"), detail))
    completion, old_completion = status.get("completionTime"), old_status.get("completionTime")
    if completion is not None and old_completion is not None and completion != old_completion:
        shown = go_time(completion)
        errs.append(field.invalid(STATUS.child("completionTime"), shown, "field is immutable"))
    started, completed = _timestamp(status.get("startTime")), _timestamp(completion)
    if started is not None and completed is not None and completed < started:
        detail = "completionTime cannot be set before startTime"
        errs.append(field.invalid(STATUS.child("completionTime"), go_time(completion), detail))
    return errs
