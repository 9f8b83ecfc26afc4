"""When giving capacity back pays: one replica fewer, and zero.

A replica is given back only when the rest still cover the forecast over the horizon — the
replicas the sizing asked for stayed at or below N - 1 (the N/(N-1) check: the sizing does not
depend on the replicas running, agent.capacity.sizing.size_shared, so after the scale-down it
asks for no more and 2 <-> 1 cannot flap) — and only after that has held for as long as the
replica's reload costs: a keep time counted in model loads (the policy's `keep_loads`), or
longer than the workload's own usual dip below N (a high percentile of how long its asks stayed
below N before coming back, over the last half hour), whichever is longer: a dip as short as
the usual ones ends before a reload pays. To zero only after no arrival for the larger of the
keep time and a high percentile of the workload's own idle gaps — never on utilization alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.capacity.windows import percentile

HISTORY_S = 1800.0
"""The sizing's asks are remembered this long: the dips they hold are the workload's usual ones."""
DIP_PERCENTILE = 0.95


def keep_s(load_s: float, keep_loads: float) -> float:
    """The keep time: `keep_loads` model loads of `load_s` seconds."""
    return max(0.0, load_s) * max(0.0, keep_loads)


def release_to(
    needs: Sequence[tuple[float, int]], desired: int, now: float, keep: float
) -> int | None:
    """The replicas to keep when the sizing's asks (`needs`: (POSIX time, replicas), oldest
    first) have all been below `desired` for at least `keep` seconds (`release_after`); None
    otherwise. Never below 1 (zero is `quiet_enough`'s call)."""
    if desired <= 1 or not needs:
        return None
    window = [n for t, n in needs if now - t <= keep]
    covered = needs[0][0] <= now - keep
    if not covered or not window:
        return None
    most = max(*window, 1)
    return most if most < desired else None


def dips(needs: Sequence[tuple[float, int]], below: int) -> list[float]:
    """How long each complete dip in `needs` lasted: from the first ask for fewer than `below`
    replicas to the next ask for `below` or more (a dip still going on, or one that began
    before the first ask kept, is not counted)."""
    lengths: list[float] = []
    start: float | None = None
    seen_high = False
    for t, n in needs:
        if n >= below:
            if start is not None and seen_high:
                lengths.append(t - start)
            start, seen_high = None, True
        elif start is None:
            start = t
    return lengths


def release_after(
    needs: Sequence[tuple[float, int]], desired: int, keep: float, q: float = DIP_PERCENTILE
) -> float:
    """Seconds the asks must stay below `desired` before one replica fewer: the keep time, or a
    quarter longer than the `q` percentile of the workload's dips below `desired`."""
    found = dips(needs, desired)
    return max(keep, GAP_MARGIN * percentile(found, q)) if found else keep


GAP_MARGIN = 1.25
"""The usual idle gap is estimated from a few gaps, measured between readings: zero waits a
quarter longer than it, so a workload whose questions come like clockwork keeps its replica."""


def zero_after(keep: float, usual_gap_s: float) -> float:
    """Seconds without an arrival before zero: the keep time or the usual idle gap (with its
    margin), whichever is longer."""
    return max(keep, usual_gap_s * GAP_MARGIN)


def quiet_enough(quiet_for_s: float | None, keep: float, usual_gap_s: float) -> bool:
    """No arrival for long enough to go to zero (None: never seen one — not enough either)."""
    return quiet_for_s is not None and quiet_for_s >= zero_after(keep, usual_gap_s)
