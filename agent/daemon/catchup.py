"""Bringing a simulated cluster up to the decision log's time before anything is recorded.

The simulated cluster is saved at most every second between decisions (and after every action),
so a process killed in between leaves it a little older than the log. Opened as it is, its
clock would stamp new records before the last one: record times would go backwards (the log's
append refuses that). The world went on while the agent was down, so the cluster is advanced to
the log's last time instead. Used by every command that writes the log on the simulated
cluster's clock (run, plan, mode).
"""

from __future__ import annotations

from datetime import datetime

from tools.backends.sim import SimCluster


def catch_up(sim: SimCluster, log_time: datetime | None) -> None:
    """Advance `sim` to `log_time` when it is behind it (None: an empty log, nothing to do)."""
    if log_time is not None and sim.now < log_time:
        sim.advance((log_time - sim.now).total_seconds())
