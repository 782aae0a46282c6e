"""How a Job's spec.podFailurePolicy judges a failed pod, as the Job controller of
kube-controller-manager (v1.32) applies it: the first rule whose exit codes (of a container
that terminated with a non-zero code) or pod conditions match decides whether the failure
counts toward backoffLimit, is ignored, or fails the whole Job."""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api.objects import Object

FAIL_JOB = "FailJob"
IGNORE = "Ignore"
FAIL_INDEX = "FailIndex"


@dataclass(frozen=True)
class Verdict:
    counts: bool
    """The failure counts toward backoffLimit."""
    fail_job_message: str | None = None
    """Set when the pod fails the Job."""
    fails_index: bool = False
    """A FailIndex rule matched: the pod's index fails (with backoffLimitPerIndex)."""


COUNTED = Verdict(counts=True)


def _terminated_code(status: Object) -> int | None:
    terminated = (status.get("state") or {}).get("terminated")
    return None if terminated is None else terminated.get("exitCode", 0)


def _matching_container(pod: Object, requirement: Object) -> tuple[str, int] | None:
    """The first container (app containers before init ones) that exited non-zero with a
    code the requirement names."""
    status = pod.get("status") or {}
    name = requirement.get("containerName")
    values = requirement.get("values") or []
    for key in ("containerStatuses", "initContainerStatuses"):
        for c in status.get(key) or []:
            code = _terminated_code(c)
            if code is None or code == 0 or (name is not None and c.get("name") != name):
                continue
            if (code in values) == (requirement.get("operator") == "In"):
                return c.get("name", ""), code
    return None


def _matching_condition(pod: Object, patterns: list[Object]) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        for pattern in patterns:
            if c.get("type") == pattern.get("type") and c.get("status") == pattern.get("status"):
                return c["type"]
    return None


def judge(policy: Object | None, pod: Object) -> Verdict:
    """What the policy makes of the failed `pod`."""
    if policy is None:
        return COUNTED
    where = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            matched = _matching_container(pod, rule["onExitCodes"])
            if matched is None:
                continue
            container, code = matched
            message = (
                f"Container {container} for pod {where} failed with exit code {code} "
                f"matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions") is not None:
            kind = _matching_condition(pod, rule["onPodConditions"])
            if kind is None:
                continue
            message = f"Pod {where} has condition {kind} matching {action} rule at index {index}"
        else:
            continue
        if action == IGNORE:
            return Verdict(counts=False)
        if action == FAIL_JOB:
            return Verdict(counts=True, fail_job_message=message)
        if action == FAIL_INDEX:
            return Verdict(counts=True, fails_index=True)
        return COUNTED
    return COUNTED
