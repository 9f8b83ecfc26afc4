"""Bringing a simulated cluster up to the decision log's time before anything is recorded.

The simulated cluster is saved at most every second between decisions (and after every action),
so a process killed in between leaves it a little older than the log. Opened as it is, its
clock would stamp new records before the last one: record times would go backwards (the log's
append refuses that). The world went on while the agent was down, so a world that moves only
when told (`Parts.advance`, the simulator) is advanced to the log's last time instead; a real
cluster's clock is not ours to move. Used by every command that writes the log on the cluster's
clock (run, plan, mode).
"""

from __future__ import annotations

from datetime import datetime

from tools.backends.parts import Parts


def catch_up(parts: Parts, log_time: datetime | None) -> None:
    """Advance a simulated world to `log_time` when it is behind (None: an empty log)."""
    if log_time is None or parts.advance is None:
        return
    behind = (log_time - parts.clock.now()).total_seconds()
    if behind > 0:
        parts.advance(behind)
