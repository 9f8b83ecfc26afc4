"""With 20 % of API requests failing (5xx, 409, 429, timeouts), every action happens once.

Faults strike before the twin touches anything, as an overloaded API server's do; the backend
retries only what is temporary, a bounded number of times, and reads come from its watch caches,
which resume from their last resourceVersion after a broken watch (no relist).
"""

from __future__ import annotations

from lab.twin.faults import FaultSettings
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend


def test_one_effect_per_action_and_bounded_retries(twin: Twin) -> None:
    b = open_backend(twin, request_timeout_s=0.25, retry_attempts=8)
    try:
        lists_after_start = b.lists
        twin.configure_faults(FaultSettings(rate=0.2, timeout_s=0.4, seed=3))
        engine = twin.sim.engine
        results = [b.scale("render", 0)]
        twin.advance(30)
        b.caches["pods"].wait_rv(int(twin.store.rv), 5.0)
        results += [b.place("burst-llm", "render-1"), b.place("burst-llm", "render-1")]
        for _ in range(6):
            results += [
                b.set_accepting("tts", False),
                b.set_accepting("tts", True),
                b.cordon("gx10-a"),
                b.uncordon("gx10-a"),
                b.scale("worker", 0),
            ]
            twin.advance(60)  # the worker's replica exits
            b.caches["pods"].wait_rv(int(twin.store.rv), 5.0)
            results.append(b.scale("worker", 1))
        assert all(r.ok and r.changed for r in results), [r.message for r in results]
        runs = twin.call(lambda: engine.state.workloads)
        assert runs["render"].desired == 0 and runs["worker"].desired == 1
        assert runs["burst-llm"].desired == 2 and runs["burst-llm"].next_index == 2  # not 3+
        assert runs["worker"].next_index == 7  # one new replica per scale-up, no more
        assert runs["tts"].accepting and not engine.state.nodes["gx10-a"].cordoned
        injected = sum(twin.faults.injected.values())
        assert injected >= 8, twin.faults.injected  # the faults did strike
        writes = [r for r in twin.requests if r.method in ("PUT", "PATCH", "POST")]
        heard = [r for r in writes if r.status < 300 and not r.client_gone]
        unheard = [r for r in writes if r.status < 300 and r.client_gone]
        # Each action was accepted once with the client hearing of it. A write the server
        # accepted after the client's 0.25 s timeout (a slow answer on a loaded machine, as on a
        # real API server) is sent again: the effects above show that it did not act twice.
        assert len(results) - len(unheard) <= len(heard) <= len(results), (heard, unheard)
        held_back = [r for r in twin.requests if r.status == 504]
        assert held_back and all(r.client_gone for r in held_back)  # the twin sees a client leave
        assert b.call.calls <= 8 * len(results) * 2  # bounded: reads + writes, 8 tries at most
        assert b.lists == lists_after_start  # watches resumed; nothing was listed again
    finally:
        twin.configure_faults(FaultSettings())
        b.close()
