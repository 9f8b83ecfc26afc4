"""Independent replays run at once: `steward bench trace --jobs N`.

A benchmark is many replays that share nothing (a training grid, each test seed's controllers, the
bound's search per test seed): each is a call with no argument that returns a picklable
result. With `jobs` > 1 they run in that many forked processes: the children inherit the calls
(closures over the prepared loads, which need no pickling) and send back only their results, in
the order given. Every replay draws from generators seeded by its own setup, never from a shared
one, so the results are those of `jobs` = 1; only the decision timings (`median_ms`, `p99_ms`)
measure the machine.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
MAX_JOBS = 64

_calls: list[Callable[[], Any]] = []
"""The calls of the pool now running, read by the forked children (set just before the fork)."""


def _call(i: int) -> Any:
    return _calls[i]()


def run_all(calls: Sequence[Callable[[], T]], jobs: int = 1) -> list[T]:
    """Each call's result, in order; `jobs` processes at once (1: here, one after another)."""
    if jobs <= 1 or len(calls) <= 1:
        return [c() for c in calls]
    _calls[:] = calls
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=context) as pool:
            return list(pool.map(_call, range(len(calls))))
    finally:
        _calls.clear()
