"""Node allocatable and the kubelet's eviction thresholds, as Kubernetes v1.32.

    allocatable = capacity - kube-reserved - system-reserved - hard eviction threshold

per resource, never below zero (pkg/kubelet/cm and the MachineInfo setter in
pkg/kubelet/nodestatus). Only two hard eviction signals reserve anything: memory.available
from memory and nodefs.available from ephemeral-storage; a percentage is of that resource's
capacity. Pre-allocated hugepages are then taken out of allocatable memory, since the kernel
holds them back from ordinary allocations. Reserved amounts for resources the node does not
have are ignored.

Eviction thresholds are read from the kubelet's configuration maps (`evictionHard`,
`evictionSoft`, `evictionSoftGracePeriod`, `evictionMinimumReclaim`) as
pkg/kubelet/eviction/helpers.go parses them, with the same error wording, prefixed by the
offending field and signal.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from reprlib import repr as brief
from types import MappingProxyType
from typing import Any

from pinnace.clock.duration import parse_duration
from pinnace.resources.lists import ResourceList, parse_resource_list
from pinnace.resources.names import EPHEMERAL_STORAGE, MEMORY, is_hugepage_resource_name
from pinnace.resources.quantity import BINARY_SI, Quantity, QuantityError

__all__ = [
    "DEFAULT_EVICTION_HARD",
    "OP_LESS_THAN",
    "SIGNALS",
    "Threshold",
    "ThresholdValue",
    "node_allocatable",
    "parse_eviction_thresholds",
    "threshold_quantity",
]

SIGNAL_MEMORY_AVAILABLE = "memory.available"
SIGNAL_NODEFS_AVAILABLE = "nodefs.available"
SIGNALS = frozenset(
    {
        SIGNAL_MEMORY_AVAILABLE,
        SIGNAL_NODEFS_AVAILABLE,
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "allocatableMemory.available",
        "pid.available",
    }
)
OP_LESS_THAN = "LessThan"  # the operator of every signal

DEFAULT_EVICTION_HARD: Mapping[str, str] = MappingProxyType(
    {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "imagefs.available": "15%",
        "nodefs.inodesFree": "5%",
    }
)
"""The kubelet's evictionHard on Linux when its configuration sets none."""

# Which resource's capacity a hard threshold reserves from allocatable.
_RESERVING_SIGNALS = {SIGNAL_MEMORY_AVAILABLE: MEMORY, SIGNAL_NODEFS_AVAILABLE: EPHEMERAL_STORAGE}


@dataclass(frozen=True)
class ThresholdValue:
    """An absolute quantity, or a fraction of capacity when `quantity` is None."""

    quantity: Quantity | None = None
    percentage: float = 0.0  # a float32 fraction, as the kubelet keeps it: "10%" is 0.1


@dataclass(frozen=True)
class Threshold:
    """Evict when `signal` falls below `value`; soft thresholds must hold for `grace_period`
    seconds first (a grace period of 0 makes a threshold hard)."""

    signal: str
    value: ThresholdValue
    operator: str = OP_LESS_THAN
    grace_period: float = 0.0
    min_reclaim: ThresholdValue | None = None

    @property
    def is_hard(self) -> bool:
        return self.grace_period == 0


def parse_eviction_thresholds(
    hard: Mapping[str, str] | None = None,
    soft: Mapping[str, str] | None = None,
    soft_grace_periods: Mapping[str, str] | None = None,
    minimum_reclaim: Mapping[str, str] | None = None,
) -> list[Threshold]:
    """Hard thresholds, then soft ones, in the order given. `0%` and `100%` disable a
    threshold. Raises ValueError for an unknown signal or a bad value."""
    hard_thresholds = _parse_statements("evictionHard", hard)
    soft_thresholds = _parse_statements("evictionSoft", soft)
    grace_periods = {
        signal: _parse_grace_period(signal, text)
        for signal, text in _entries("evictionSoftGracePeriod", soft_grace_periods)
    }
    reclaims = {
        signal: _parse_min_reclaim(signal, text)
        for signal, text in _entries("evictionMinimumReclaim", minimum_reclaim)
    }
    results = list(hard_thresholds)
    for t in soft_thresholds:
        if t.signal not in grace_periods:
            raise ValueError(
                f"evictionSoft[{t.signal}]: grace period must be specified for the soft "
                f"eviction threshold {t.signal}"
            )
        results.append(Threshold(t.signal, t.value, grace_period=grace_periods[t.signal]))
    return [
        Threshold(t.signal, t.value, t.operator, t.grace_period, reclaims[t.signal])
        if t.signal in reclaims
        else t
        for t in results
    ]


def threshold_quantity(value: ThresholdValue, capacity: Quantity) -> Quantity:
    """The absolute amount of a threshold on a resource of `capacity` (GetThresholdQuantity:
    a percentage is applied in floating point and truncated to whole units)."""
    if value.quantity is not None:
        return value.quantity
    return Quantity.from_milli(int(float(capacity.value()) * value.percentage) * 1000, BINARY_SI)


def node_allocatable(
    capacity: Mapping[str, Any],
    kube_reserved: Mapping[str, Any] | None = None,
    system_reserved: Mapping[str, Any] | None = None,
    eviction_hard: Mapping[str, str] | None = None,
) -> ResourceList:
    """The node's allocatable resources, as the kubelet reports them in `status.allocatable`.

    Maps hold quantity strings (or Quantity/int). `eviction_hard` is in kubelet form; None
    means the kubelet's default (DEFAULT_EVICTION_HARD) and `{}` means no hard eviction.
    """
    cap = parse_resource_list(capacity, "capacity")
    kube = parse_resource_list(kube_reserved, "kubeReserved")
    system = parse_resource_list(system_reserved, "systemReserved")
    hard = DEFAULT_EVICTION_HARD if eviction_hard is None else eviction_hard
    eviction: ResourceList = {}
    for t in parse_eviction_thresholds(hard=hard):
        resource = _RESERVING_SIGNALS.get(t.signal)
        if resource is not None and t.operator == OP_LESS_THAN:
            eviction[resource] = threshold_quantity(t.value, cap.get(resource, Quantity(0)))

    allocatable: ResourceList = {}
    for name, q in cap.items():
        reserved = system.get(name, 0) + kube.get(name, 0) + eviction.get(name, 0)
        allocatable[name] = _non_negative(q - reserved)
    for name, q in cap.items():
        if is_hugepage_resource_name(name):
            # As the kubelet does, this sets memory (to 0) even without memory capacity.
            allocatable[MEMORY] = _non_negative(allocatable.get(MEMORY, Quantity(0)) - q)
    return allocatable


def _non_negative(q: Quantity) -> Quantity:
    return Quantity(0) if q.sign() < 0 else q


def _entries(field: str, statements: Mapping[str, str] | None) -> list[tuple[str, str]]:
    if not statements:
        return []
    if not isinstance(statements, Mapping):
        raise ValueError(f"{field}: must be a map of signals to values, not {brief(statements)}")
    entries = []
    for signal, text in statements.items():
        if signal not in SIGNALS:
            raise ValueError(f"{field}[{signal}]: unsupported eviction signal {signal}")
        if not isinstance(text, str):
            raise ValueError(f"{field}[{signal}]: must be a string, not {brief(text)}")
        entries.append((signal, text))
    return entries


def _parse_statements(field: str, statements: Mapping[str, str] | None) -> list[Threshold]:
    thresholds = []
    for signal, text in _entries(field, statements):
        where = f"{field}[{signal}]"
        if text.endswith("%"):
            if text in ("0%", "100%"):
                continue
            percentage = _parse_percentage(where, text)
            if percentage < 0:
                raise ValueError(
                    f"{where}: eviction percentage threshold {signal} must be >= 0%: {text}"
                )
            if percentage > 1:
                raise ValueError(
                    f"{where}: eviction percentage threshold {signal} must be <= 100%: {text}"
                )
            thresholds.append(Threshold(signal, ThresholdValue(percentage=percentage)))
            continue
        quantity = _parse_quantity(where, text)
        if quantity.sign() <= 0:
            raise ValueError(f"{where}: eviction threshold {signal} must be positive: {quantity}")
        thresholds.append(Threshold(signal, ThresholdValue(quantity=quantity)))
    return thresholds


def _parse_min_reclaim(signal: str, text: str) -> ThresholdValue:
    where = f"evictionMinimumReclaim[{signal}]"
    if text.endswith("%"):
        percentage = _parse_percentage(where, text)
        if percentage <= 0:
            raise ValueError(
                f"{where}: eviction percentage minimum reclaim {signal} must be positive: {text}"
            )
        return ThresholdValue(percentage=percentage)
    quantity = _parse_quantity(where, text)
    if quantity.sign() < 0:
        raise ValueError(f"{where}: negative eviction minimum reclaim specified for {signal}")
    return ThresholdValue(quantity=quantity)


def _parse_quantity(where: str, text: str) -> Quantity:
    try:
        return Quantity(text)
    except QuantityError as e:
        raise ValueError(f"{where}: {e}") from None


# strconv.ParseFloat's decimal syntax and its names for infinity.
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)", re.I)
_FLOAT32_MAX = float.fromhex("0x1.fffffep127")


def _parse_percentage(where: str, text: str) -> float:
    """ "10%" -> float32(10) / 100 in float32, as the kubelet's parsePercentage."""
    number = text.rstrip("%")
    if not _FLOAT.fullmatch(number):
        # Go would also take hex floats and NaN; a NaN threshold would never fire.
        raise ValueError(f'{where}: strconv.ParseFloat: parsing "{number}": invalid syntax')
    value = float(number)
    if math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        raise ValueError(f'{where}: strconv.ParseFloat: parsing "{number}": value out of range')
    return _float32(_float32(value) / 100)


def _float32(x: float) -> float:
    # Rounding the exact float64 quotient of two float32s to float32 gives float32 division.
    if math.isinf(x):
        return x
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _parse_grace_period(signal: str, text: str) -> float:
    """A Go duration ("1m30s") in seconds; negative ones are refused as the kubelet does."""
    where = f"evictionSoftGracePeriod[{signal}]"
    try:
        nanos = parse_duration(text)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if nanos < 0:
        raise ValueError(
            f"{where}: invalid eviction grace period specified: {text}, must be a positive value"
        )
    return nanos / 1e9
