"""The spread of a figure over the seeds of a comparison: its mean and a 95 % confidence
interval by Student's t distribution, for a sample and for paired differences.

With n values of sample standard deviation s, the interval is mean ± t · s / √n, where t is the
0.975 quantile of Student's t with n − 1 degrees of freedom (12.71 for 2 values, 2.78 for 5,
2.26 for 10): the interval that holds the true mean 95 % of the time if the values are drawn
independently from a normal distribution. One value has no interval.

The quantile is found by bisection on the distribution's cumulative function, which for a
whole number of degrees of freedom is a finite sum (Abramowitz and Stegun, 26.7.3 and 26.7.4),
so no statistics library is needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

CONFIDENCE = 0.95
_BISECTIONS = 200


def _central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with `df` degrees of freedom (t >= 0)."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2:
        total, term = 0.0, math.cos(theta)
        for k in range(3, df, 2):  # cos θ (1 + 2/3 cos² θ + (2·4)/(3·5) cos⁴ θ + ...)
            total += term
            term *= cos2 * (k - 1) / k
        if df > 1:
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    total, term = 0.0, 1.0
    for k in range(2, df + 1, 2):  # 1 + 1/2 cos² θ + (1·3)/(2·4) cos⁴ θ + ...
        total += term
        term *= cos2 * (k - 1) / k
    return math.sin(theta) * total


@cache
def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| <= t) = `confidence`: the multiplier of a two-sided interval."""
    if df < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    low, high = 0.0, 1.0
    while _central(high, df) < confidence:
        high *= 2
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if _central(middle, df) < confidence:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2


@dataclass(frozen=True)
class Spread:
    """n values: their mean, the 95 % interval of the mean (None for fewer than two values),
    and the least and greatest."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    min: float | None
    max: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "n": self.n,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "min": self.min,
            "max": self.max,
        }


def spread(values: Iterable[float | None]) -> Spread:
    """The spread of the values that are known (None and NaN left out)."""
    known = [float(v) for v in values if v is not None and not math.isnan(v)]
    n = len(known)
    if not n:
        return Spread(0, None, None, None, None, None)
    mean = math.fsum(known) / n
    low = high = None
    if n > 1:
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in known) / (n - 1))
        half = t_quantile(n - 1) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return Spread(n, mean, low, high, min(known), max(known))


def paired(values: Iterable[float | None], baseline: Iterable[float | None]) -> Spread:
    """The spread of the differences value − baseline, pair by pair (a pair with a value
    missing left out): run under the same seed, the two runs share their random draws, so the
    differences vary less than the values do."""
    differences = [
        v - b
        for v, b in zip(values, baseline, strict=True)
        if v is not None and b is not None and not (math.isnan(v) or math.isnan(b))
    ]
    return spread(differences)
