"""The distributions a workload generator draws run times and usage from (docs/simulation.md).

Each draws from the `numpy.random.Generator` it is given, so a simulation that seeds its
generators draws the same values again. Values are in the units the Scenario file reads them
into: seconds, CPU cores, bytes. `mean` is the distribution's expected value, for reports and
for checking a scenario against what it meant to model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Distribution(Protocol):
    @property
    def mean(self) -> float: ...

    @property
    def highest(self) -> float:
        """The highest value it gives (inf: there is none)."""
        ...

    def sample(self, rng: np.random.Generator) -> float: ...


@dataclass(frozen=True)
class Constant:
    value: float

    def __post_init__(self) -> None:
        _finite("value", self.value)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def highest(self) -> float:
        return self.value

    def sample(self, rng: np.random.Generator) -> float:
        return self.value


@dataclass(frozen=True)
class Uniform:
    """Every value from `low` to `high` equally likely."""

    low: float
    high: float

    def __post_init__(self) -> None:
        _finite("min", self.low)
        _finite("max", self.high)
        if self.low > self.high:
            raise ValueError("min must not be greater than max")

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def highest(self) -> float:
        return self.high

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))


@dataclass(frozen=True)
class Exponential:
    """Memoryless: the time between a Poisson process's events, or a service time."""

    mean: float

    def __post_init__(self) -> None:
        _finite("mean", self.mean)
        if self.mean <= 0:
            raise ValueError("mean must be greater than 0")

    @property
    def highest(self) -> float:
        return math.inf

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.exponential(self.mean))


@dataclass(frozen=True)
class LogNormal:
    """A value whose natural logarithm is normal with mean `mu` and deviation `sigma`: its
    median is e^mu, and a few values are far above it (job run times, memory footprints)."""

    mu: float
    sigma: float

    def __post_init__(self) -> None:
        _finite("mu", self.mu)
        _finite("sigma", self.sigma)
        if self.sigma < 0:
            raise ValueError("sigma must not be negative")

    @classmethod
    def from_median(cls, median: float, sigma: float) -> LogNormal:
        if not median > 0:
            raise ValueError("median must be greater than 0")
        return cls(math.log(median), sigma)

    @property
    def median(self) -> float:
        return math.exp(self.mu)

    @property
    def mean(self) -> float:
        return math.exp(self.mu + self.sigma**2 / 2)

    @property
    def highest(self) -> float:
        return math.inf if self.sigma else self.median

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.lognormal(self.mu, self.sigma))


@dataclass(frozen=True)
class Empirical:
    """One of `values`, each equally likely (list a value twice to make it twice as likely)."""

    values: tuple[float, ...]

    def __init__(self, values: Sequence[float]) -> None:
        if not values:
            raise ValueError("must list at least one value")
        for value in values:
            _finite("value", value)
        object.__setattr__(self, "values", tuple(values))

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / len(self.values)

    @property
    def highest(self) -> float:
        return max(self.values)

    def sample(self, rng: np.random.Generator) -> float:
        return self.values[int(rng.integers(len(self.values)))]


def _finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number")
