"""What a write to a Job's status may do, as Kubernetes v1.32 checks it.

JobManagedBy is on in v1.32, so every status write gets the strengthened checks meant for
controllers other than kube-controller-manager's (getStatusValidationOptions): a Job that
finished stays finished and got there through FailureTarget or SuccessCriteriaMet, its
counters do not go down, its completion time is set once, with Complete only, and not before
its start; a finished Job has no active, terminating or uncounted pods; completed and failed
indexes are well formed and apart; no more pods are ready than active. Most checks apply
only when the fields they look at change, so a write about something else goes through.
One v1.32 check is left out on purpose (docs/differences.md): a new startTime on an
unsuspended Job.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import STATUS, Object, counter, validate_nonnegative_fields
from pinnace.api.batch.indexes import IndexesError, intervals, parse_interval
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.field import ErrorType, FieldError
from pinnace.api.validation import GoValue, go_time, is_int, list_field
from pinnace.clock.rfc3339 import parse_time

COUNTERS = ("active", "succeeded", "failed", "ready", "terminating")
TERMINAL_CONDITIONS = ("Failed", "Complete", "FailureTarget")
_CONDITIONS = STATUS.child("conditions")


def condition_true(status: Object, kind: str) -> bool:
    conditions = list_field(status.get("conditions"), STATUS)[0]
    return any(
        as_dict(c).get("type") == kind and as_dict(c).get("status") == "True" for c in conditions
    )


def is_finished(status: Object) -> bool:
    return condition_true(status, "Complete") or condition_true(status, "Failed")


def _go_uncounted(uncounted: Object) -> GoValue:
    """batch.UncountedTerminatedPods as `%#v` prints it."""

    def uids(name: str) -> str:
        values = list_field(uncounted.get(name), STATUS)[0]
        if not values:
            return "[]types.UID(nil)"
        return "[]types.UID{" + ", ".join(f'"{v}"' for v in values) + "}"

    shown = f"Succeeded:{uids('succeeded')}, Failed:{uids('failed')}"
    return GoValue(f"batch.UncountedTerminatedPods{{{shown}}}")


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


class _Change:
    """A status write: the new and old Jobs, and what it changes."""

    def __init__(self, new: Object, old: Object) -> None:
        self.spec = as_dict(new.get("spec"))
        self.status, self.old = as_dict(new.get("status")), as_dict(old.get("status"))

    def true(self, kind: str) -> bool:
        return condition_true(self.status, kind)

    def flipped(self, kind: str) -> bool:
        return condition_true(self.status, kind) != condition_true(self.old, kind)

    def changed(self, name: str) -> bool:
        return self.status.get(name) != self.old.get(name)

    def count_changed(self, name: str) -> bool:
        return counter(self.status, name) != counter(self.old, name)

    @property
    def finished_changed(self) -> bool:
        return is_finished(self.status) != is_finished(self.old)

    @property
    def indexed(self) -> bool:
        return self.spec.get("completionMode") == "Indexed"


def _validate_terminal_conditions(c: _Change) -> list[FieldError]:
    """Complete excludes Failed and FailureTarget and goes with a completion time; Failed
    comes after FailureTarget, Complete after SuccessCriteriaMet."""
    errs: list[FieldError] = []
    complete_changed = c.flipped("Complete")
    if (complete_changed or c.flipped("Failed")) and c.true("Complete") and c.true("Failed"):
        errs.append(_omitted(_CONDITIONS, "cannot set Complete=True and Failed=true conditions"))
    if (
        (complete_changed or c.flipped("FailureTarget"))
        and c.true("Complete")
        and c.true("FailureTarget")
    ):
        detail = "cannot set Complete=True and FailureTarget=true conditions"
        errs.append(_omitted(_CONDITIONS, detail))
    completion = c.status.get("completionTime")
    times_changed = complete_changed or c.changed("completionTime")
    if times_changed and completion is not None and not c.true("Complete"):
        detail = "cannot set completionTime when there is no Complete=True condition"
        errs.append(field.invalid(STATUS.child("completionTime"), go_time(completion), detail))
    if times_changed and completion is None and c.true("Complete"):
        detail = "completionTime is required for Complete jobs"
        errs.append(field.required(STATUS.child("completionTime"), detail))
    started, completed = _timestamp(c.status.get("startTime")), _timestamp(completion)
    if (
        (c.changed("startTime") or c.changed("completionTime"))
        and started is not None
        and completed is not None
        and completed < started
    ):
        detail = "completionTime cannot be set before startTime"
        errs.append(field.invalid(STATUS.child("completionTime"), go_time(completion), detail))
    if (
        (c.flipped("Failed") or c.changed("failedIndexes"))
        and c.true("Failed")
        and not c.true("FailureTarget")
    ):
        detail = "cannot set Failed=True condition without the FailureTarget=true condition"
        errs.append(_omitted(_CONDITIONS, detail))
    if complete_changed and c.true("Complete") and not c.true("SuccessCriteriaMet"):
        detail = "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
        errs.append(_omitted(_CONDITIONS, detail))
    return errs


def _validate_finished(c: _Change) -> list[FieldError]:
    """A finished Job has a start and no active or uncounted pods."""
    if not is_finished(c.status):
        return []
    errs: list[FieldError] = []
    active = counter(c.status, "active")
    if (c.finished_changed or c.count_changed("active")) and active > 0:
        detail = "active>0 is invalid for finished job"
        errs.append(field.invalid(STATUS.child("active"), active, detail))
    if (c.finished_changed or c.changed("startTime")) and c.status.get("startTime") is None:
        detail = "startTime is required for finished job"
        errs.append(field.required(STATUS.child("startTime"), detail))
    uncounted = as_dict(c.status.get("uncountedTerminatedPods"))
    if (c.finished_changed or c.changed("uncountedTerminatedPods")) and list_field(
        uncounted.get("succeeded"), STATUS
    )[0] + list_field(uncounted.get("failed"), STATUS)[0]:
        detail = "uncountedTerminatedPods needs to be empty for finished job"
        path = STATUS.child("uncountedTerminatedPods")
        errs.append(field.invalid(path, _go_uncounted(uncounted), detail))
    return errs


def _validate_indexes(c: _Change) -> list[FieldError]:
    """completedIndexes and failedIndexes: well formed below completions, only where the
    Job has such indexes, and never the same index in both."""
    completions = c.spec.get("completions")
    completed, failed = c.status.get("completedIndexes") or "", c.status.get("failedIndexes")
    completed_changed, failed_changed = c.changed("completedIndexes"), c.changed("failedIndexes")
    per_index = c.spec.get("backoffLimitPerIndex") is not None
    errs: list[FieldError] = []
    parsed: dict[str, list[tuple[int, int]]] = {}
    for name, text, changed, applies in (
        ("completedIndexes", completed, completed_changed, True),
        ("failedIndexes", failed, failed_changed, per_index and failed is not None),
    ):
        if not is_int(completions) or not isinstance(text, str):
            continue
        try:
            parsed[name] = intervals(text, completions)
        except IndexesError as e:
            if changed and applies:
                detail = f"error parsing {name}: {e}"
                errs.append(field.invalid(STATUS.child(name), text, detail))
    if completed_changed and completed and not c.indexed:
        detail = "cannot set non-empty completedIndexes when non-indexed completion mode"
        errs.append(field.invalid(STATUS.child("completedIndexes"), completed, detail))
    if failed_changed and not per_index and failed is not None:
        detail = "cannot set non-null failedIndexes when backoffLimitPerIndex is null"
        errs.append(field.invalid(STATUS.child("failedIndexes"), failed, detail))
    if (completed_changed or failed_changed) and isinstance(failed, str):
        overlap = _first_overlap(completed, failed, completions)
        if overlap is not None:
            detail = f"failedIndexes and completedIndexes overlap at index: {overlap}"
            errs.append(field.invalid(STATUS.child("failedIndexes"), failed, detail))
    return errs


def _well_formed(text: str, completions: int) -> list[tuple[int, int]]:
    """The intervals of the text that parse, skipping the others (the format check reports
    them), as validateFailedIndexesNotOverlapCompleted reads them."""
    found = []
    for part in text.split(","):
        try:
            found.append(parse_interval(part, completions))
        except IndexesError:
            continue
    return found


def _first_overlap(completed: str, failed: str, completions: Any) -> int | None:
    if not completed or not failed or not is_int(completions):
        return None
    done, lost = _well_formed(completed, completions), _well_formed(failed, completions)
    i = j = 0
    while i < len(done) and j < len(lost):
        (c_first, c_last), (f_first, f_last) = done[i], lost[j]
        if c_first <= f_last and f_first <= c_last:
            return max(c_first, f_first)
        if c_first <= f_first:
            i += 1
        else:
            j += 1
    return None


def _validate_success_criteria(c: _Change) -> list[FieldError]:
    """SuccessCriteriaMet never goes with a failure, and a Job with a success policy
    completes only through it."""
    errs: list[FieldError] = []
    met = c.true("SuccessCriteriaMet")
    if met and c.true("Failed"):
        detail = "cannot set SuccessCriteriaMet=True and Failed=true conditions"
        errs.append(_omitted(_CONDITIONS, detail))
    if met and c.true("FailureTarget"):
        detail = "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"
        errs.append(_omitted(_CONDITIONS, detail))
    if c.spec.get("successPolicy") is not None and not met and c.true("Complete"):
        detail = (
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"
        )
        errs.append(_omitted(_CONDITIONS, detail))
    return errs


def _validate_transitions(c: _Change) -> list[FieldError]:
    """ValidateJobStatusUpdate's own checks: what the write changes."""
    errs: list[FieldError] = []
    for kind in TERMINAL_CONDITIONS:
        if condition_true(c.old, kind) and not c.true(kind):
            errs.append(_omitted(_CONDITIONS, f"cannot disable the terminal {kind}=True condition"))
    for name in ("failed", "succeeded"):
        decreased = counter(c.status, name) < counter(c.old, name)
        scalable = name == "succeeded" and c.indexed and _equal_sizes(c.spec)
        if decreased and not scalable:
            detail = f"cannot decrease the {name} counter"
            errs.append(field.invalid(STATUS.child(name), counter(c.status, name), detail))
    completion, old_completion = c.status.get("completionTime"), c.old.get("completionTime")
    if completion is not None and old_completion is not None and completion != old_completion:
        detail = "completionTime cannot be mutated"
        errs.append(field.invalid(STATUS.child("completionTime"), go_time(completion), detail))
    if condition_true(c.old, "SuccessCriteriaMet") and not c.true("SuccessCriteriaMet"):
        detail = "cannot disable the SuccessCriteriaMet=True condition"
        errs.append(_omitted(_CONDITIONS, detail))
    if (
        condition_true(c.old, "Complete")
        and not condition_true(c.old, "SuccessCriteriaMet")
        and c.true("SuccessCriteriaMet")
    ):
        detail = "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"
        errs.append(_omitted(_CONDITIONS, detail))
    return errs


def _equal_sizes(spec: Object) -> bool:
    """An Indexed Job scaled with parallelism equal to completions may lose successes."""
    return spec.get("completions") == spec.get("parallelism")


def validate_job_status(new: Object, old: Object) -> list[FieldError]:
    """validateJobStatus and ValidateJobStatusUpdate (new and old are the Jobs)."""
    c = _Change(new, old)
    errs = validate_nonnegative_fields(c.status, STATUS, COUNTERS) + _validate_uncounted(c.status)
    errs += _validate_terminal_conditions(c) + _validate_finished(c) + _validate_indexes(c)
    terminating = counter(c.status, "terminating")
    if (
        (c.finished_changed or c.count_changed("terminating"))
        and terminating > 0
        and is_finished(c.status)
    ):
        detail = "terminating>0 is invalid for finished job"
        errs.append(field.invalid(STATUS.child("terminating"), terminating, detail))
    ready = c.status.get("ready")
    if (
        (c.changed("ready") or c.count_changed("active"))
        and is_int(ready)
        and ready > counter(c.status, "active")
    ):
        detail = "cannot set more ready pods than active"
        errs.append(field.invalid(STATUS.child("ready"), ready, detail))
    return errs + _validate_success_criteria(c) + _validate_transitions(c)
