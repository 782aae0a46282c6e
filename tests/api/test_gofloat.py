"""Floats as Go's strconv.FormatFloat(f, 'g', -1, 64) writes them (the Prometheus text format
of the Go client): integral values without `.0`, %e from an exponent of 6 or below -4."""

from __future__ import annotations

import pytest

from pinnace.api.gofloat import format_float


@pytest.mark.parametrize(
    ("value", "go"),
    [
        (1.0, "1"),
        (0.0, "0"),
        (-3.0, "-3"),
        (60.0, "60"),
        (0.005, "0.005"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (2.5e6, "2.5e+06"),
        (1234567.0, "1.234567e+06"),
        (1e21, "1e+21"),
        (2.2500000000000005e-05, "2.2500000000000005e-05"),
        (0.00011390625000000003, "0.00011390625000000003"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (float("nan"), "NaN"),
    ],
)
def test_as_go_writes_it(value: float, go: str) -> None:
    assert format_float(value) == go
