"""The bounds of what a scenario may ask of the simulator: beyond them a file is refused with its
place, never run until it exhausts memory (10^12 replicas grew to 5.3 GB in 20 s) or overflows
the clock (a start of 9999-12-31)."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_REPLICAS = 100_000
"""Replicas of one workload: the largest fleet profile has 20,000 nodes of 16 cards."""
MAX_RATE_PER_MIN = 1e7
"""Requests per minute to one target (~170,000 a second)."""
MAX_SPAN_S = 366 * 86_400.0
"""Any time in a scenario (a duration, an offset, a fault's start): a year."""
EARLIEST_START = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_START = datetime(2100, 1, 1, tzinfo=UTC)
