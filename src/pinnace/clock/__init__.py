"""Time and randomness: the one clock/loop interface every component schedules work through.

Live mode backs a `Clock` with a real asyncio loop; simulated mode with a `VirtualClock`, whose
loop jumps to the next event instead of waiting. Randomness comes from one seeded `Randomness`.
"""

from pinnace.clock.clock import Clock, Timer
from pinnace.clock.duration import format_duration, parse_duration
from pinnace.clock.loop import DEFAULT_EPOCH, DeadlockError, VirtualEventLoop, VirtualModeError
from pinnace.clock.rand import Randomness
from pinnace.clock.rfc3339 import (
    format_micro_time,
    format_time,
    micro_instant,
    parse_time,
    second_instant,
)
from pinnace.clock.virtual import VirtualClock

__all__ = [
    "DEFAULT_EPOCH",
    "Clock",
    "DeadlockError",
    "Randomness",
    "Timer",
    "VirtualClock",
    "VirtualEventLoop",
    "VirtualModeError",
    "format_duration",
    "format_micro_time",
    "format_time",
    "micro_instant",
    "parse_duration",
    "parse_time",
    "second_instant",
]
