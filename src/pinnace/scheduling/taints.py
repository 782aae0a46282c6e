"""Taints and tolerations: Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go) and
FindMatchingUntoleratedTaint (component-helpers/scheduling/corev1/helpers.go)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

PREFER_NO_SCHEDULE = "PreferNoSchedule"


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" (or empty) or "Exists"
    value: str
    effect: str  # empty matches every effect

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go)."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == value
        return self.operator == "Exists"


def first_untolerated(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> Taint | None:
    """FindMatchingUntoleratedTaint: the first taint no toleration tolerates."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if not any(t.tolerates(*taint) for t in tolerations):
            return taint
    return None


def pod_tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    """A pod spec's tolerations."""
    return tuple(_toleration(t) for t in spec.get("tolerations") or ())


def _toleration(t: Mapping[str, Any]) -> Toleration:
    return _shared_toleration(
        t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or ""
    )


@functools.lru_cache(maxsize=1024)
def _shared_toleration(key: str, operator: str, value: str, effect: str) -> Toleration:
    # Tolerations are immutable and most pods carry the same few (the default ones).
    return Toleration(key, operator, value, effect)
