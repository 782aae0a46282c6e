"""Reading a plugin's `args` from a DeschedulerPolicy: typed fields with defaults, and the pod
selections (namespaces include/exclude, labelSelector) most plugins share. Every error names
the field it is about."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api import field
from pinnace.api.apps import as_label_selector, validate_selector
from pinnace.api.field import Path
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object
from pinnace.clock.duration import parse_duration


class PolicyError(ValueError):
    """A bad policy; the message names the field."""


class Args:
    """A plugin's args object at `path`; each getter checks one field's type."""

    def __init__(self, raw: Any, path: Path) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise PolicyError(str(field.invalid(path, raw, "must be an object")))
        self.raw: Mapping[str, Any] = raw
        self.path = path

    def fail(self, name: str, value: Any, detail: str) -> PolicyError:
        return PolicyError(str(field.invalid(self.path.child(name), value, detail)))

    def missing(self, name: str) -> PolicyError:
        return PolicyError(str(field.required(self.path.child(name))))

    def forbidden(self, detail: str) -> PolicyError:
        return PolicyError(str(field.forbidden(self.path, detail)))

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self.fail(name, value, "must be true or false")
        return value

    def integer(self, name: str, default: int | None = None, minimum: int = 0) -> int | None:
        value = self.raw.get(name, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, value, "must be an integer")
        if value < minimum:
            raise self.fail(name, value, f"must be greater than or equal to {minimum}")
        return value

    def duration(self, name: str) -> float | None:
        """A Go duration ("5m", "1h30m") in seconds; None when absent."""
        value = self.raw.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(name, value, 'must be a duration such as "5m"')
        try:
            nanos = parse_duration(value)
        except ValueError as e:
            raise PolicyError(f"{self.path.child(name)}: {e}") from None
        if nanos < 0:
            raise self.fail(name, value, "must not be negative")
        return nanos / 1e9

    def strings(self, name: str, allowed: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.raw.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(name, value, "must be a list of strings")
        for i, v in enumerate(value):
            if allowed and v not in allowed:
                raise PolicyError(
                    str(field.not_supported(self.path.child(name).index(i), v, allowed))
                )
        return tuple(value)

    def integers(self, name: str) -> tuple[int, ...]:
        """A list of int32s (exit codes)."""
        value = self.raw.get(name) or []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31 for v in value
        ):
            raise self.fail(name, value, "must be a list of 32-bit integers")
        return tuple(value)

    def percentages(self, name: str) -> dict[str, float] | None:
        """A map of resource name to a percentage in [0, 100]; None when absent."""
        value = self.raw.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(name, value, "must be a map of resource name to percentage")
        for resource, percent in value.items():
            number = isinstance(percent, int | float) and not isinstance(percent, bool)
            if not number or not 0 <= percent <= 100:
                path = self.path.child(name).key(resource)
                raise PolicyError(str(field.invalid(path, percent, "must be in [0, 100]")))
        return {k: float(v) for k, v in value.items()}

    def selector(self, name: str = "labelSelector") -> LabelSelector | None:
        value = self.raw.get(name)
        if value is None:
            return None
        errors = validate_selector(value, self.path.child(name))
        if errors:
            raise PolicyError(str(errors[0]))
        return as_label_selector(value)

    def namespaces(self, name: str = "namespaces", exclude_only: bool = False) -> Namespaces:
        value = self.raw.get(name)
        if value is None:
            return Namespaces()
        path = self.path.child(name)
        inner = Args(value, path)
        include, exclude = inner.strings("include"), inner.strings("exclude")
        if include and exclude:
            raise inner.forbidden("only one of include and exclude can be set")
        if include and exclude_only:
            raise PolicyError(
                str(field.forbidden(path.child("include"), "only exclude is supported"))
            )
        return Namespaces(frozenset(include), frozenset(exclude))


@dataclass(frozen=True)
class Namespaces:
    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        if self.include:
            return namespace in self.include
        return namespace not in self.exclude


ALL_NAMESPACES = Namespaces()


@dataclass(frozen=True)
class PodSelection:
    """The `namespaces` and `labelSelector` a plugin is restricted to."""

    namespaces: Namespaces = ALL_NAMESPACES
    labels: LabelSelector | None = None

    @classmethod
    def read(cls, args: Args) -> PodSelection:
        return cls(args.namespaces(), args.selector())

    def selects(self, pod: Object) -> bool:
        if not self.namespaces.allows(pod["metadata"].get("namespace", "")):
            return False
        return self.labels is None or self.labels.matches(pod["metadata"].get("labels") or {})


ALL_PODS = PodSelection()
