"""The spread over seeds: Student t intervals, for values and for differences paired by seed."""

from __future__ import annotations

import math
import statistics

import pytest

from pinnace.sim.spread import paired, spread, t_quantile

T_975 = {1: 12.706204736, 2: 4.302652730, 4: 2.776445105, 9: 2.262157163, 30: 2.042272456}
"""Student t's 0.975 quantiles by degrees of freedom, from published tables."""


@pytest.mark.parametrize(("df", "expected"), sorted(T_975.items()))
def test_the_t_quantile_is_the_tables(df: int, expected: float) -> None:
    assert t_quantile(df) == pytest.approx(expected, abs=1e-8)


def test_the_t_quantile_tends_to_the_normals() -> None:
    assert t_quantile(100_000) == pytest.approx(1.959964, abs=1e-4)


def test_an_interval_is_the_mean_plus_or_minus_t_s_over_root_n() -> None:
    values = [3.0, 5.0, 4.0, 8.0, 5.0]
    found = spread(values)
    half = T_975[4] * statistics.stdev(values) / math.sqrt(5)
    assert found.n == 5 and found.mean == 5.0 and (found.min, found.max) == (3.0, 8.0)
    assert (found.low, found.high) == pytest.approx((5.0 - half, 5.0 + half))


def test_missing_values_are_left_out_and_one_value_has_no_interval() -> None:
    assert spread([2.0, None, math.nan]).as_dict() == {
        "n": 1, "mean": 2.0, "low": None, "high": None, "min": 2.0, "max": 2.0,
    }  # fmt: skip
    assert spread([]).mean is None


def test_paired_differences_cancel_what_the_seeds_share() -> None:
    baseline = [10.0, 20.0, 30.0]
    found = paired([12.0, 22.0, 32.0], baseline)
    assert (found.mean, found.low, found.high) == (2.0, 2.0, 2.0)
    assert paired([1.0, None], [None, 2.0]).n == 0
