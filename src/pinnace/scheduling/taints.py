"""Taints and tolerations: Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go) and
FindMatchingUntoleratedTaint (component-helpers/scheduling/corev1/helpers.go)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pinnace.api.objects import Shared

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
    tolerations = spec.get("tolerations")
    return tuple([_toleration(t) for t in tolerations]) if tolerations else ()


def _toleration(t: Mapping[str, Any]) -> Toleration:
    # Tolerations are immutable and most pods carry the same few (the default ones): one
    # object is shared by all that read alike.
    return _SHARED_TOLERATIONS[(t.get("key"), t.get("operator"), t.get("value"), t.get("effect"))]


_SHARED_TOLERATIONS: Shared[tuple[Any, ...], Toleration] = Shared(
    lambda fields: Toleration(*(value or "" for value in fields)), 1024
)
