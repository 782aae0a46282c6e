"""The distributions of workload generators: drawn from a seeded generator, the same values
again for the same seed, with the mean each promises."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from pinnace.sim.distributions import (
    Constant,
    Distribution,
    Empirical,
    Exponential,
    LogNormal,
    Uniform,
)

DISTRIBUTIONS: list[Distribution] = [
    Constant(30.0),
    Uniform(10.0, 50.0),
    Exponential(120.0),
    LogNormal.from_median(300.0, 0.5),
    Empirical([1.0, 2.0, 2.0, 10.0]),
]
DRAWS = 20_000


def draws(distribution: Distribution, seed: int, n: int = DRAWS) -> list[float]:
    rng = np.random.default_rng(seed)
    return [distribution.sample(rng) for _ in range(n)]


@pytest.mark.parametrize("distribution", DISTRIBUTIONS, ids=lambda d: type(d).__name__)
def test_the_same_seed_draws_the_same_values(distribution: Distribution) -> None:
    assert draws(distribution, 7, 100) == draws(distribution, 7, 100)
    assert all(isinstance(v, float) for v in draws(distribution, 7, 10))
    if not isinstance(distribution, Constant):
        assert draws(distribution, 7, 100) != draws(distribution, 8, 100)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS, ids=lambda d: type(d).__name__)
def test_the_values_drawn_have_the_mean_promised(distribution: Distribution) -> None:
    assert statistics.fmean(draws(distribution, 1)) == pytest.approx(distribution.mean, rel=0.03)


def test_the_promised_means() -> None:
    assert Uniform(10, 50).mean == 30
    assert Exponential(120).mean == 120
    assert LogNormal(0, 1).mean == pytest.approx(1.6487, abs=1e-4)  # e^(1/2)
    assert Empirical([1, 2, 2, 10]).mean == 3.75


def test_uniform_stays_within_its_bounds() -> None:
    values = draws(Uniform(10, 50), 2)
    assert min(values) >= 10 and max(values) <= 50


def test_a_lognormal_by_its_median() -> None:
    distribution = LogNormal.from_median(300, 0.5)
    assert distribution.median == pytest.approx(300)
    assert statistics.median(draws(distribution, 3)) == pytest.approx(300, rel=0.03)


def test_empirical_draws_only_the_listed_values_as_often_as_listed() -> None:
    values = draws(Empirical([1, 2, 2, 10]), 4)
    assert set(values) == {1, 2, 10}
    assert values.count(2) / len(values) == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Uniform(5, 1), "min must not be greater than max"),
        (lambda: Exponential(0), "mean must be greater than 0"),
        (lambda: LogNormal(1, -1), "sigma must not be negative"),
        (lambda: LogNormal.from_median(0, 1), "median must be greater than 0"),
        (lambda: Empirical([]), "must list at least one value"),
        (lambda: Constant(float("nan")), "value must be a finite number"),
    ],
)
def test_impossible_parameters_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]
