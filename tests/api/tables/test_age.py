"""Ages against apimachinery's duration.HumanDuration."""

from __future__ import annotations

import pytest

from pinnace.api.tables.age import human_duration, since, timestamp

MINUTE, HOUR, DAY = 60, 3600, 86400


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-3, "<invalid>"),
        (-2, "<invalid>"),
        (-1.5, "0s"),
        (-1, "0s"),
        (0, "0s"),
        (0.9, "0s"),
        (5, "5s"),
        (119.9, "119s"),
        (2 * MINUTE, "2m"),
        (3 * MINUTE + 2, "3m2s"),
        (9 * MINUTE + 59, "9m59s"),
        (10 * MINUTE + 30, "10m"),
        (179 * MINUTE, "179m"),
        (3 * HOUR, "3h"),
        (5 * HOUR + 4 * MINUTE, "5h4m"),
        (7 * HOUR + 59 * MINUTE, "7h59m"),
        (8 * HOUR + 30 * MINUTE, "8h"),
        (47 * HOUR, "47h"),
        (2 * DAY, "2d"),
        (3 * DAY + 5 * HOUR, "3d5h"),
        (7 * DAY + 23 * HOUR, "7d23h"),
        (8 * DAY, "8d"),
        (10 * DAY + 5 * HOUR, "10d"),
        (729 * DAY, "729d"),
        (730 * DAY, "2y"),
        (365 * 3 * DAY + 40 * DAY, "3y40d"),
        (365 * 8 * DAY, "8y"),
        (365 * 20 * DAY + 100 * DAY, "20y"),
    ],
)
def test_human_duration(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_since_reads_rfc3339_and_unknown_for_missing() -> None:
    now = timestamp("2025-01-01T00:10:00Z")
    assert now is not None
    assert since("2025-01-01T00:00:00Z", now) == "10m"
    assert since("2025-01-01T00:09:59.500000Z", now) == "0s"
    assert since(None, now) == "<unknown>"
    assert since("", now) == "<unknown>"
    assert since("yesterday", now) == "<unknown>"
