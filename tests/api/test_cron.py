"""Cron schedules as robfig/cron v3 (which Kubernetes v1.32 uses) reads and follows them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pinnace.api.batch.cron import CronError, parse_standard


def t(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def following(spec: str, start: str, count: int = 1) -> list[str]:
    schedule = parse_standard(spec)
    now, found = t(start), []
    for _ in range(count):
        nxt = schedule.next(now)
        assert nxt is not None
        found.append(datetime.fromtimestamp(nxt, UTC).strftime("%Y-%m-%d %H:%M"))
        now = nxt
    return found


def test_every_minute_and_descriptors() -> None:
    assert following("*/1 * * * *", "2026-01-01T00:00:30+00:00", 2) == [
        "2026-01-01 00:01",
        "2026-01-01 00:02",
    ]
    assert following("@hourly", "2026-01-01T00:00:00+00:00") == ["2026-01-01 01:00"]
    assert following("@daily", "2026-01-01T00:00:00+00:00") == ["2026-01-02 00:00"]
    assert following("@weekly", "2026-01-01T00:00:00+00:00") == ["2026-01-04 00:00"]  # Sunday
    assert following("@monthly", "2026-01-15T00:00:00+00:00") == ["2026-02-01 00:00"]
    assert following("@yearly", "2026-01-15T00:00:00+00:00") == ["2027-01-01 00:00"]
    assert following("@every 1h30m", "2026-01-01T00:00:00+00:00") == ["2026-01-01 01:30"]


def test_names_ranges_and_steps() -> None:
    assert following("0 9 * * MON-FRI", "2026-01-02T10:00:00+00:00") == ["2026-01-05 09:00"]
    assert following("30 6-16/4 * * *", "2026-01-05T10:00:00+00:00", 3) == [
        "2026-01-05 10:30",
        "2026-01-05 14:30",
        "2026-01-06 06:30",
    ]
    # N/step runs from N to the end of the range.
    assert following("50/5 * * * *", "2026-01-05T10:00:00+00:00", 3) == [
        "2026-01-05 10:50",
        "2026-01-05 10:55",
        "2026-01-05 11:50",
    ]


def test_day_of_month_or_day_of_week() -> None:
    # Both restricted: either matches (the 1st, or a Monday).
    assert following("0 0 1 * 1", "2026-03-28T00:00:00+00:00", 2) == [
        "2026-03-30 00:00",
        "2026-04-01 00:00",
    ]
    # A star in either: both must match.
    assert following("0 0 * * 1", "2026-03-28T00:00:00+00:00") == ["2026-03-30 00:00"]


def test_an_impossible_date_never_comes() -> None:
    assert parse_standard("0 0 31 2 *").next(t("2026-01-01T00:00:00+00:00")) is None


def test_time_zones_and_daylight_saving() -> None:
    # 03:00 in Paris is 02:00 UTC in winter, 01:00 UTC in summer (from 29 March 2026).
    assert following("TZ=Europe/Paris 0 3 * * *", "2026-03-27T12:00:00+00:00", 3) == [
        "2026-03-28 02:00",
        "2026-03-29 01:00",
        "2026-03-30 01:00",
    ]
    # 02:30 does not exist on 29 March in Paris: that day is skipped.
    assert following("TZ=Europe/Paris 30 2 * * *", "2026-03-28T12:00:00+00:00") == [
        "2026-03-30 00:30"
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec string"),
        ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("@every", "unrecognized descriptor: @every"),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        ("TZ=Mars/Base * * * * *", "provided bad location Mars/Base: unknown time zone Mars/Base"),
    ],
)
def test_robfig_crons_errors(spec: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_standard(spec)
    assert str(caught.value) == message
