"""The expanders: which node group to grow when several would help
(cluster-autoscaler/expander: random, mostpods, waste, priority; expander/EXPANDERS.md).

- random: any of them, drawn from the run's seeded stream;
- most-pods: the one that would schedule the most pods;
- least-waste: the one leaving the least cpu and memory of its new nodes idle (the wasted
  fractions of each, added), from the pods' containers' requests over the template's capacity;
- priority: the groups whose names match the highest priority's regular expressions in the
  ConfigMap `cluster-autoscaler-priority-expander` (kube-system, key `priorities`, YAML of
  priority -> list of expressions). With no ConfigMap or a bad one, no group is chosen; with no
  group matching, any of them.

Every expander but random breaks its ties at random.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from pinnace.api.objects import Object
from pinnace.kubelet.cluster_config import NodePool
from pinnace.resources.quantity import Quantity

PRIORITY_CONFIG_MAP = "cluster-autoscaler-priority-expander"
PRIORITY_KEY = "priorities"


@dataclass
class Option:
    """Growing `group` by `node_count` nodes, on which `pods` would be scheduled."""

    group: NodePool
    node_count: int
    pods: list[Object]
    template: Object
    """The Node a new node of the group would be."""


@dataclass
class ConfigWarning:
    """A warning the expander records on its ConfigMap: (reason, message)."""

    reason: str
    message: str


@dataclass
class Expander:
    name: str
    rng: random.Random
    config_map: Callable[[], Object | None] = lambda: None
    """The priority expander's ConfigMap as it is now."""
    warnings: list[ConfigWarning] = field(default_factory=list)
    """What the last choice has to say on the ConfigMap, for the caller to record."""

    def best(self, options: Sequence[Option]) -> Option | None:
        self.warnings = []
        if not options:
            return None
        match self.name:
            case "most-pods":
                return self._random(_top(options, lambda o: len(o.pods)))
            case "least-waste":
                return self._random(_top(options, lambda o: -_waste(o)))
            case "priority":
                return self._priority(options)
            case _:
                return self._random(options)

    def _random(self, options: Sequence[Option]) -> Option:
        return options[self.rng.randrange(len(options))] if len(options) > 1 else options[0]

    def _priority(self, options: Sequence[Option]) -> Option | None:
        priorities = self._priorities()
        if priorities is None:
            return None
        top: int | None = None
        best: list[Option] = []
        for option in options:
            matched = [p for p, rules in priorities.items() if _matches(option.group.name, rules)]
            if not matched:
                self._warn(
                    "PriorityConfigMapNotMatchedGroup",
                    f"Priority expander: node group {option.group.name} not found in priority "
                    "expander configuration. The group won't be used.",
                )
                continue
            priority = max(matched)
            if top is None or priority > top:
                top, best = priority, [option]
            elif priority == top:
                best.append(option)
        if not best:
            self._warn(
                "PriorityConfigMapNoGroupMatched",
                "Priority expander: no priorities info found for any of the expansion options. "
                "Falling back to random choice.",
            )
            return self._random(options)
        return self._random(best)

    def _priorities(self) -> dict[int, list[re.Pattern[str]]] | None:
        config_map = self.config_map()
        if config_map is None:
            return None
        text = (config_map.get("data") or {}).get(PRIORITY_KEY)
        if text is None:
            self._warn(
                "PriorityConfigMapInvalid",
                "Wrong configmap for priority expander, doesn't contain priorities key. "
                "Ignoring update.",
            )
            return None
        try:
            return _parse_priorities(text)
        except ValueError as e:
            self._warn(
                "PriorityConfigMapInvalid",
                f"Wrong configuration for priority expander: {e}. Ignoring update.",
            )
            return None

    def _warn(self, reason: str, message: str) -> None:
        self.warnings.append(ConfigWarning(reason, message))


def _parse_priorities(text: str) -> dict[int, list[re.Pattern[str]]]:
    if not text:
        raise ValueError(
            f"priority configuration in {PRIORITY_CONFIG_MAP} configmap is empty; please "
            "provide valid configuration"
        )
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"Can't parse YAML with priorities in the configmap: {e}") from None
    if not isinstance(raw, dict) or not all(
        isinstance(k, int) and isinstance(v, list) for k, v in raw.items()
    ):
        raise ValueError("Can't parse YAML with priorities in the configmap: not a map of lists")
    priorities: dict[int, list[re.Pattern[str]]] = {}
    for priority, rules in raw.items():
        for rule in rules:
            try:
                priorities.setdefault(priority, []).append(re.compile(str(rule)))
            except re.error as e:
                raise ValueError(
                    f"Can't compile regexp rule for priority {priority} and rule {rule}: {e}"
                ) from None
    return priorities


def _matches(name: str, rules: Sequence[re.Pattern[str]]) -> bool:
    return any(rule.search(name) for rule in rules)


def _top(options: Sequence[Option], score: Callable[[Option], float]) -> list[Option]:
    best = max(score(o) for o in options)
    return [o for o in options if score(o) == best]


def _waste(option: Option) -> float:
    """The wasted fraction of cpu plus that of memory on the option's new nodes."""
    capacity = (option.template.get("status") or {}).get("capacity") or {}
    wasted = 0.0
    for resource in ("cpu", "memory"):
        available = _amount(resource, capacity.get(resource)) * option.node_count
        requested = sum(_container_requests(p, resource) for p in option.pods)
        if available > 0:
            wasted += (available - requested) / available
    return wasted


def _container_requests(pod: Mapping[str, Any], resource: str) -> int:
    return sum(
        _amount(resource, ((c.get("resources") or {}).get("requests") or {}).get(resource))
        for c in (pod.get("spec") or {}).get("containers") or ()
    )


def _amount(resource: str, value: Any) -> int:
    """Millicores for cpu, bytes otherwise (0 when absent)."""
    if value is None:
        return 0
    quantity = Quantity(str(value))
    return quantity.milli_value() if resource == "cpu" else quantity.value()
