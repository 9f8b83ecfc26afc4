"""Durations and daily time windows as a policy writes them: `10m`, `1h30m`, `08:00`–`20:00`.

A duration is a non-negative `timedelta`, written as seconds (`90`) or with units (`90s`, `10m`,
`1h30m`, `2d`). A window is a span of local time on some weekdays; one that ends before it
starts runs over midnight (`23:00`–`07:00`), counted from the day it starts; one that ends where
it starts (`00:00`–`00:00`) is the whole day.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from typing import Annotated, Literal

from pydantic import BeforeValidator, PlainSerializer

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `10m`, `1h30m`, `2d` or a timedelta -> timedelta; ValueError otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text like 10m, 1h30m")
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        parts = _PART.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"{value!r} is not a duration; write it like 90s, 10m, 1h30m or 2d")
        seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
    else:
        raise ValueError("a duration is a number of seconds or text like 10m, 1h30m")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative (got {seconds:g} s)")
    if not seconds <= MAX_DURATION_S:  # also NaN
        raise ValueError(f"a duration of at most 10 years, please (got {value!r})")
    return timedelta(seconds=seconds)


MAX_DURATION_S = 10 * 365 * 86400.0
"""No guardrail needs longer, and timedelta overflows not far beyond."""


def format_duration(value: timedelta) -> str:
    """The shortest `1h30m`-style text for a duration (whole seconds)."""
    total = round(value.total_seconds())
    if total == 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, total = divmod(total, size)
        if count:
            out += f"{count}{unit}"
    return out


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]


def in_window(local: datetime, start: time, end: time, days: tuple[Weekday, ...]) -> bool:
    """Whether the local time falls in the daily window [start, end) on one of `days`.

    A window with end < start runs over midnight and belongs to the day it starts on; one with
    end == start covers the whole day.
    """
    clock = local.time().replace(tzinfo=None)
    today = WEEKDAYS[local.weekday()]
    if start == end:
        return today in days
    if start < end:
        return today in days and start <= clock < end
    yesterday = WEEKDAYS[(local.weekday() - 1) % 7]
    return (today in days and clock >= start) or (yesterday in days and clock < end)


def aware(when: datetime) -> datetime:
    """`when` with a time zone: a naive time is taken as UTC (observations are stamped in UTC)."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
