"""Job conditions as the Job controller writes them (v1.32): the interim SuccessCriteriaMet
and FailureTarget, the terminal Complete and Failed, and Suspended."""

from __future__ import annotations

from pinnace.api.objects import Object

COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
SUSPENDED = "Suspended"


def new_condition(kind: str, reason: str, message: str, now: str, status: str = "True") -> Object:
    return {
        "type": kind,
        "status": status,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def condition(conditions: list[Object], kind: str) -> Object | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def ensure_condition(
    conditions: list[Object], kind: str, status: str, reason: str, message: str, now: str
) -> tuple[list[Object], bool]:
    """`conditions` with the condition of that type set (a False one is only added over an
    existing one), and whether anything changed."""
    current = condition(conditions, kind)
    if current is not None:
        if (current.get("status"), current.get("reason"), current.get("message")) == (
            status,
            reason,
            message,
        ):
            return conditions, False
        replaced = new_condition(kind, reason, message, now, status)
        return [replaced if c is current else c for c in conditions], True
    if status == "False":
        return conditions, False
    return [*conditions, new_condition(kind, reason, message, now, status)], True
