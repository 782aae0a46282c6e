"""From the replica count the metrics propose to the count an HPA sets, as kube-controller-
manager v1.32 normalizes it (pkg/controller/podautoscaler/horizontal.go).

Without `spec.behavior`: the highest recommendation of the downscale stabilization window
(5 minutes) wins, and a scale up is limited to max(2 x current, 4). With a behavior: the
recommendation is held between the lowest of the scale-up window and the highest of the
scale-down window, then the rate policies bound the change from the count at the start of
each policy's period (Pods adds or removes a number, Percent a share; selectPolicy picks the
largest change, the smallest, or none). minReplicas and maxReplicas bound both.

The recommendations and scale events are the controller's memory, lost on restart as in
Kubernetes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.objects import Object

DEFAULT_DOWNSCALE_STABILIZATION_WINDOW = 300.0
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0

Condition = tuple[str, str, str, str]
"""(type, status, reason, message) to set on the HPA."""

_WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
_READY = ("ReadyForNewScale", "recommended size matches current size")
_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
_UP_LIMIT = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
)
_DOWN_LIMIT = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
)
_UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
_DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent "
    "recommendation",
)


@dataclass
class _Recommendation:
    replicas: int
    time: float


@dataclass
class _ScaleEvent:
    change: int
    """How many replicas were added or removed (never negative)."""
    time: float
    outdated: bool = False


@dataclass
class _History:
    recommendations: list[_Recommendation] = field(default_factory=list)
    scale_ups: list[_ScaleEvent] = field(default_factory=list)
    scale_downs: list[_ScaleEvent] = field(default_factory=list)


def _limited(condition: tuple[str, str], limited: bool) -> Condition:
    return ("ScalingLimited", "True" if limited else "False", *condition)


def _able(condition: tuple[str, str]) -> Condition:
    return ("AbleToScale", "True", *condition)


def _changes_in_period(period: float, events: list[_ScaleEvent], now: float) -> int:
    return sum(e.change for e in events if e.time > now - period)


def _net_removed_in_period(policy: Object, history: _History, now: float) -> int:
    """Replicas removed less replicas added within the policy's period: current plus this is
    the count the period started with."""
    period = float(policy.get("periodSeconds", 0))
    added = _changes_in_period(period, history.scale_ups, now)
    removed = _changes_in_period(period, history.scale_downs, now)
    return -added + removed


def scale_up_limit(current: int, rules: Object, history: _History, now: float) -> int:
    """The most replicas the scale-up policies allow now."""

    def allowed(start: int, policy: Object) -> int:
        if policy.get("type") == "Pods":
            return start + int(policy["value"])
        # rounded up, or a small percentage of a few pods would never add one
        return math.ceil(start * (1 + int(policy["value"]) / 100))

    return _policy_limit(current, rules, history, now, allowed, most=True)


def scale_down_limit(current: int, rules: Object, history: _History, now: float) -> int:
    """The fewest replicas the scale-down policies allow now."""

    def allowed(start: int, policy: Object) -> int:
        if policy.get("type") == "Pods":
            return start - int(policy["value"])
        return int(start * (1 - int(policy["value"]) / 100))

    return _policy_limit(current, rules, history, now, allowed, most=False)


def _policy_limit(
    current: int,
    rules: Object,
    history: _History,
    now: float,
    allowed: Callable[[int, Object], int],
    most: bool,
) -> int:
    """Each policy's limit from the count its period started with; selectPolicy Max picks the
    one that lets the count move furthest (`most`: the largest), Min the least."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    proposals = [
        allowed(current + _net_removed_in_period(policy, history, now), policy)
        for policy in rules.get("policies") or []
    ]
    if not proposals:
        return current
    return max(proposals) if (select == "Max") == most else min(proposals)


class Normalizer:
    """Each HPA's recent recommendations and scale events, and the rules applied to them."""

    def __init__(
        self, downscale_stabilization_window: float = DEFAULT_DOWNSCALE_STABILIZATION_WINDOW
    ) -> None:
        self.downscale_stabilization_window = downscale_stabilization_window
        self._histories: dict[str, _History] = {}

    def forget(self, key: str) -> None:
        self._histories.pop(key, None)

    def record_initial(self, key: str, current: int, now: float) -> None:
        history = self._histories.setdefault(key, _History())
        if not history.recommendations:
            history.recommendations.append(_Recommendation(current, now))

    def normalize(
        self,
        key: str,
        spec: Object,
        current: int,
        desired: int,
        min_replicas: int,
        now: float,
    ) -> tuple[int, list[Condition]]:
        """The replica count to set for the metrics' proposal `desired`, and the AbleToScale
        and ScalingLimited conditions that explain it."""
        history = self._histories.setdefault(key, _History())
        behavior = spec.get("behavior")
        if behavior is None:
            return self._without_behavior(history, spec, current, desired, min_replicas, now)
        return self._with_behavior(history, behavior, spec, current, desired, min_replicas, now)

    def _without_behavior(
        self,
        history: _History,
        spec: Object,
        current: int,
        desired: int,
        min_replicas: int,
        now: float,
    ) -> tuple[int, list[Condition]]:
        cutoff = now - self.downscale_stabilization_window
        stabilized = desired
        old: int | None = None
        for i, rec in enumerate(history.recommendations):
            if rec.time < cutoff:
                old = i
            elif rec.replicas > stabilized:
                stabilized = rec.replicas
        _record(history, old, desired, now)
        able = _able(_DOWN_STABILIZED if stabilized != desired else _READY)

        maximum = int(spec.get("maxReplicas", 0))
        limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
        allowed, upper = (limit, _UP_LIMIT) if maximum > limit else (maximum, _TOO_MANY)
        if stabilized < min_replicas:
            return min_replicas, [able, _limited(_TOO_FEW, True)]
        if stabilized > allowed:
            return allowed, [able, _limited(upper, True)]
        return stabilized, [able, _limited(_WITHIN_RANGE, False)]

    def _with_behavior(
        self,
        history: _History,
        behavior: Object,
        spec: Object,
        current: int,
        desired: int,
        min_replicas: int,
        now: float,
    ) -> tuple[int, list[Condition]]:
        up_rules = behavior.get("scaleUp") or {}
        down_rules = behavior.get("scaleDown") or {}
        up_window = float(up_rules.get("stabilizationWindowSeconds") or 0)
        down_window = down_rules.get("stabilizationWindowSeconds")
        if down_window is None:
            down_window = self.downscale_stabilization_window
        up_cutoff, down_cutoff = now - up_window, now - float(down_window)

        up_recommendation = down_recommendation = desired
        old: int | None = None
        for i, rec in enumerate(history.recommendations):
            if rec.time > up_cutoff:
                up_recommendation = min(rec.replicas, up_recommendation)
            if rec.time > down_cutoff:
                down_recommendation = max(rec.replicas, down_recommendation)
            if rec.time < up_cutoff and rec.time < down_cutoff:
                old = i
        stabilized = min(max(current, up_recommendation), down_recommendation)
        _record(history, old, desired, now)
        if stabilized != desired:
            able = _able(_UP_STABILIZED if desired >= current else _DOWN_STABILIZED)
        else:
            able = _able(_READY)

        maximum = int(spec.get("maxReplicas", 0))
        if stabilized > current:
            limit = max(scale_up_limit(current, up_rules, history, now), current)
            allowed, reason = (limit, _UP_LIMIT) if maximum > limit else (maximum, _TOO_MANY)
            if stabilized > allowed:
                return allowed, [able, _limited(reason, True)]
        elif stabilized < current:
            limit = min(scale_down_limit(current, down_rules, history, now), current)
            allowed, reason = (
                (limit, _DOWN_LIMIT) if min_replicas < limit else (min_replicas, _TOO_FEW)
            )
            if stabilized < allowed:
                return allowed, [able, _limited(reason, True)]
        return stabilized, [able, _limited(_WITHIN_RANGE, False)]

    def record_scale(self, key: str, behavior: Any, before: int, after: int, now: float) -> None:
        """Remember a rescale for the rate policies (only HPAs with a behavior use them)."""
        if behavior is None:
            return
        history = self._histories.setdefault(key, _History())
        up = after > before
        rules = (behavior.get("scaleUp") if up else behavior.get("scaleDown")) or {}
        events = history.scale_ups if up else history.scale_downs
        longest = max(
            (float(p.get("periodSeconds", 0)) for p in rules.get("policies") or []), default=0.0
        )
        reusable: int | None = None
        for i, event in enumerate(events):
            if event.time < now - longest:
                event.outdated = True
            if event.outdated:
                reusable = i
        event = _ScaleEvent(abs(after - before), now)
        if reusable is None:
            events.append(event)
        else:
            events[reusable] = event


def _record(history: _History, old: int | None, replicas: int, now: float) -> None:
    """Keep the unstabilized recommendation, in the place of an expired one if there is."""
    if old is None:
        history.recommendations.append(_Recommendation(replicas, now))
    else:
        history.recommendations[old] = _Recommendation(replicas, now)
