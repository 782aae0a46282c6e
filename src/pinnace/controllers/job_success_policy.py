"""spec.successPolicy of Indexed Jobs, as the Job controller of kube-controller-manager (v1.32)
applies it: the Job succeeds early once a rule's indexes (all, or succeededCount of them)
or, for a rule with a count alone, that many indexes succeeded."""

from __future__ import annotations

from pinnace.api.objects import Object
from pinnace.controllers.job_indexes import Intervals


def _overlap(rule: Intervals, succeeded: Intervals) -> int:
    return sum(
        max(0, min(r.last, s.last) - max(r.first, s.first) + 1) for r in rule for s in succeeded
    )


def matched_rule_message(policy: Object | None, completions: int, succeeded: Intervals) -> str:
    """ "Matched rules at index N" for the first rule met, or "" for none."""
    if policy is None or not succeeded:
        return ""
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            wanted = Intervals.parse(rule["succeededIndexes"], completions)
            if not wanted:
                continue
            done = _overlap(wanted, succeeded)
            if done == wanted.total() or (count is not None and done >= count):
                return f"Matched rules at index {index}"
        elif count is not None and succeeded.total() >= count:
            return f"Matched rules at index {index}"
    return ""
