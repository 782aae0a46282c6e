"""Go's strconv.FormatFloat(f, 'g', -1, 64), as the Prometheus Go client's text format writes
a float (expfmt's writeFloat): a sample's value and the bound of a histogram bucket (`le`) or
a summary's quantile. The shortest digits that read back as `f`, in decimal notation unless the
exponent is below -4 or at least 6 (`1`, `0.005`, `100000`, `1e+06`, `1e-05`), where Python
writes `1.0` and `1000000.0`: a PromQL selector copied from a Kubernetes dashboard
(`le="1"`) matches only the Go spelling."""

from __future__ import annotations

import math
from decimal import Decimal

FORMAT_FLOAT_E_FROM = 6
"""strconv.FormatFloat's precision for the choice of %e when the digits are the shortest."""
PRINT_V_E_FROM = 21
"""fmt's: `%v` of a float64 (shortest digits) turns to %e only from exponent 21."""


def format_float(f: float, e_from: int = FORMAT_FLOAT_E_FROM) -> str:
    """The shortest digits of `f` in decimal notation, or in %e form when the exponent is
    below -4 or at least `e_from` (PRINT_V_E_FROM gives fmt's `%v`)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(f)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    point = len(digit_tuple) + exponent  # digits before the decimal point
    minus = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= e_from:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"
