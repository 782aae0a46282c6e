"""Go's time.ParseDuration and Duration.String: the cases of their own tests
(src/time/time_test.go)."""

from __future__ import annotations

import pytest

from pinnace.clock.duration import format_duration, parse_duration

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("5s", 5 * SECOND),
        ("30s", 30 * SECOND),
        ("1478s", 1478 * SECOND),
        ("-5s", -5 * SECOND),
        ("+5s", 5 * SECOND),
        ("-0", 0),
        ("+0", 0),
        ("5.0s", 5 * SECOND),
        ("5.6s", 5 * SECOND + 600_000_000),
        ("5.s", 5 * SECOND),
        (".5s", 500_000_000),
        ("1.0s", SECOND),
        ("1.00s", SECOND),
        ("1.004s", SECOND + 4_000_000),
        ("100.00100s", 100 * SECOND + 1_000_000),
        ("10ns", 10),
        ("11us", 11_000),
        ("12µs", 12_000),
        ("12μs", 12_000),
        ("13ms", 13_000_000),
        ("14s", 14 * SECOND),
        ("15m", 15 * MINUTE),
        ("16h", 16 * HOUR),
        ("3h30m", 3 * HOUR + 30 * MINUTE),
        ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500_000_000),
        ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400_000_000)),
        ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4_000_000 + 5_000 + 6),
        ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425_000_000),
        ("52763797000ns", 52763797000),
        ("0.3333333333333333333h", 20 * MINUTE),
        ("9007199254740993ns", (1 << 53) + 1),
        ("9223372036854775807ns", (1 << 63) - 1),
        ("9223372036854775.807us", (1 << 63) - 1),
        ("9223372036s854ms775us807ns", (1 << 63) - 1),
        ("-9223372036854775808ns", -(1 << 63)),
        ("-9223372036854775.808us", -(1 << 63)),
        ("0.100000000000000000000h", 6 * MINUTE),
        ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372_539_827),
        # each fraction is truncated to a nanosecond on its own
        ("1.5ns1.5ns", 2),
    ],
)
def test_parses_what_go_parses(text: str, nanos: int) -> None:
    assert parse_duration(text) == nanos


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1s ", 'time: unknown unit "s " in duration "1s "'),
        (" 1s", 'time: invalid duration " 1s"'),
        ("+-1s", 'time: invalid duration "+-1s"'),
        ("1..5s", 'time: missing unit in duration "1..5s"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
        ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
        ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
        ('"1s', 'time: invalid duration "\\"1s"'),
        ("1µ", 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'),
        ("1\ts", 'time: unknown unit "\\x09s" in duration "1\\x09s"'),
    ],
)
def test_refuses_with_gos_words(text: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration(text)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_100, "1.1µs"),
        (2_200_000, "2.2ms"),
        (3_300_000_000, "3.3s"),
        (4 * MINUTE + 5 * SECOND, "4m5s"),
        (4 * MINUTE + 5_001_000_000, "4m5.001s"),
        (5 * HOUR + 6 * MINUTE + 7_001_000_000, "5h6m7.001s"),
        (8 * MINUTE + 1, "8m0.000000001s"),
        (-SECOND, "-1s"),
        (HOUR, "1h0m0s"),
    ],
)
def test_formats_as_go_does(nanos: int, text: str) -> None:
    assert format_duration(nanos) == text
    assert parse_duration(text) == nanos
