"""The daemon's garbage-collection policy: what a long-running loop over a large cluster needs.

CPython's cyclic collector suits short scripts. A daemon holding a 1,000-node observation, its
policy, its compiled graph and its audit state, and churning tens of thousands of short-lived
objects per tick, paid for it in pauses: ~25 young collections per tick and, every few ticks, a
full collection over the whole heap (up to 140 ms on a 2-core box, measured with gc.callbacks).
"""

from __future__ import annotations

import gc

GC_GEN0_THRESHOLD = 100_000
"""Container allocations (net of frees) between two young-generation collections; CPython's
default is 700. Objects are still freed by reference counting the moment they die; only
reference cycles wait for a collection."""


def settle_heap() -> None:
    """The daemon's garbage-collection policy, applied once start-up has built its objects.

    What long-running Python services do (Instagram's `gc.freeze`, gunicorn's pre-fork hooks):
    collect once, move every object that survived start-up (modules, the policy, the compiled
    graph, the cluster's state) into the permanent generation, which collections never scan
    again, and raise the young generation's threshold so that a tick's own churn — freed by
    reference counting as it goes — no longer triggers collections mid-tick. Cyclic garbage is
    still collected, only less often; a process-wide setting, so it applies to `steward run`
    and to the benchmark alike.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, middle, old)
