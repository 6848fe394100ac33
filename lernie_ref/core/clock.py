"""Injected clock (R-ID-5): ids and ``deposited_at`` stamps read time only here."""

from __future__ import annotations

import time

from lernie_ref.core import Protocol


class Clock(Protocol):
    def now_ns(self) -> int:
        """Nanoseconds since the UNIX epoch, UTC."""
        ...


class SystemClock:
    def now_ns(self) -> int:
        return time.time_ns()


class FixedClock:
    """A clock that reads a settable instant; ``tick_ns`` advances it per read."""

    def __init__(self, now_ns: int, tick_ns: int = 0) -> None:
        self._now = now_ns
        self._tick = tick_ns

    def now_ns(self) -> int:
        value = self._now
        self._now += self._tick
        return value


def _utc(now_ns: int) -> time.struct_time:
    return time.gmtime(now_ns // 1_000_000_000)


def compact_stamp(now_ns: int) -> str:
    """``%Y%m%dT%H%M%SZ``, 16 characters (R-ID-5)."""
    return time.strftime("%Y%m%dT%H%M%SZ", _utc(now_ns))


def iso_stamp(now_ns: int) -> str:
    """``%Y-%m-%dT%H:%M:%SZ``, 20 characters, whole seconds (R-DEP-4)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", _utc(now_ns))


def short_id(now_ns: int) -> str:
    """Eight lowercase hex digits of the sub-second nanosecond count (R-ID-5)."""
    return f"{now_ns % 1_000_000_000:08x}"
