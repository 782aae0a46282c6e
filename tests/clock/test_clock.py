"""Live mode: a Clock over a real asyncio loop, and times written as Kubernetes writes them."""

import asyncio
import time

import pytest

from pinnace.clock import Clock, format_micro_time, format_time, micro_instant, parse_time

NEW_YEAR_2025 = 1735689600.0


def test_now_tracks_the_wall_clock() -> None:
    async def main() -> None:
        clock = Clock(asyncio.get_running_loop())
        assert abs(clock.now() - time.time()) < 0.05
        await clock.sleep(0.02)
        assert abs(clock.now() - time.time()) < 0.05
        first = clock.monotonic()
        await clock.sleep(0.01)
        assert clock.monotonic() - first >= 0.009

    asyncio.run(main())


def test_call_at_fires_at_the_given_wall_time() -> None:
    async def main() -> tuple[float, float]:
        clock = Clock(asyncio.get_running_loop())
        fired = asyncio.get_running_loop().create_future()
        target = clock.now() + 0.05
        clock.call_at(target, lambda: fired.set_result(time.time()))
        return target, await fired

    target, fired_at = asyncio.run(main())
    assert target - 0.005 <= fired_at < target + 0.5


def test_call_later_on_the_real_loop_and_cancel() -> None:
    async def main() -> list[str]:
        clock = Clock(asyncio.get_running_loop())
        ran: list[str] = []
        clock.call_later(0.01, ran.append, "kept")
        cancelled = clock.call_later(0.005, ran.append, "cancelled")
        cancelled.cancel()
        await clock.sleep(0.03)
        assert cancelled.cancelled()
        return ran

    assert asyncio.run(main()) == ["kept"]


def test_metav1_time_has_whole_seconds_truncated() -> None:
    assert format_time(NEW_YEAR_2025) == "2025-01-01T00:00:00Z"
    assert format_time(NEW_YEAR_2025 + 59.9999) == "2025-01-01T00:00:59Z"
    assert format_time(NEW_YEAR_2025 - 0.5) == "2024-12-31T23:59:59Z"
    assert format_time(0) == "1970-01-01T00:00:00Z"


def test_micro_time_has_six_digits_to_the_nearest_microsecond() -> None:
    assert format_micro_time(NEW_YEAR_2025) == "2025-01-01T00:00:00.000000Z"
    assert format_micro_time(NEW_YEAR_2025 + 0.25) == "2025-01-01T00:00:00.250000Z"
    # 12.000001 s is not exactly representable; it must not print as 12.000000.
    assert format_micro_time(NEW_YEAR_2025 + 12.000001) == "2025-01-01T00:00:12.000001Z"
    assert format_micro_time(NEW_YEAR_2025 + 86399.9999996) == "2025-01-02T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-01T00:00:00Z", NEW_YEAR_2025),
        ("2025-01-01T00:00:00.500000Z", NEW_YEAR_2025 + 0.5),
        ("2025-01-01T00:00:00.123456789Z", NEW_YEAR_2025 + 0.123456789),
        ("2025-01-01T02:00:00+02:00", NEW_YEAR_2025),
        ("2024-12-31T19:30:00-04:30", NEW_YEAR_2025),
    ],
)
def test_parse_time_reads_rfc3339(text: str, expected: float) -> None:
    assert parse_time(text) == pytest.approx(expected, abs=1e-6)


def test_formatted_times_parse_back() -> None:
    t = NEW_YEAR_2025 + 1234.567891
    assert format_micro_time(parse_time(format_micro_time(t))) == format_micro_time(t)
    assert parse_time(format_time(t)) == NEW_YEAR_2025 + 1234


@pytest.mark.parametrize("offset", [0.0, 0.3, 1234.567891, 12.0000004, 86399.9999996, 1 / 3])
def test_a_micro_instant_is_the_time_a_micro_time_reads_back_as(offset: float) -> None:
    t = NEW_YEAR_2025 + offset
    assert micro_instant(t) == parse_time(format_micro_time(t))


@pytest.mark.parametrize(
    "text",
    ["2025-01-01", "2025-01-01 00:00:00Z", "2025-13-01T00:00:00Z", "2025-01-01T00:00:00"],
)
def test_parse_time_rejects_what_is_not_rfc3339(text: str) -> None:
    with pytest.raises(ValueError, match=f'invalid time "{text}"'):
        parse_time(text)
