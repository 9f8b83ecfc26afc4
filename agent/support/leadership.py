"""Who may act: the one replica that leads.

On the embedded simulated cluster the data dir's lock is enough — one process owns the cluster
it simulates — and `Sole` always leads. Against Kubernetes two replicas may run for
availability: `LeaseLeadership` keeps a `coordination.k8s.io/v1` Lease (tools/backends/kubernetes/
lease.py) renewed from a thread of its own; the replica that holds it acts, the other observes,
stays ready, and takes over once the Lease lapses. The loop's cluster is fenced by `leading()`
(tools/backends/parts.py), so a leader cut off from the API server stops changing anything
before its Lease can expire, whatever step it was in.
"""

from __future__ import annotations

import threading
from typing import Protocol

import structlog

log = structlog.get_logger("steward.leader")


class Leadership(Protocol):
    identity: str

    def leading(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def describe(self) -> dict[str, object]: ...


class Sole:
    """The only replica there is: it always leads (the data dir's lock keeps it alone)."""

    def __init__(self, identity: str = "steward") -> None:
        self.identity = identity

    def leading(self) -> bool:
        return True

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def describe(self) -> dict[str, object]:
        return {"identity": self.identity, "leading": True, "election": "none (data-dir lock)"}


class Holder(Protocol):
    """What `LeaseLeadership` needs of a Lease holder (tools.backends.kubernetes.lease)."""

    holder: str | None
    last_error: str

    def attempt(self) -> bool: ...

    def leading(self) -> bool: ...

    def due_s(self) -> float | None: ...

    def release(self) -> None: ...


class LeaseLeadership:
    """Leadership by a Lease, renewed every `retry_s` seconds on a daemon thread.

    A standby tries every `retry_s` too, and also at the moment the Lease it watches will have
    stood unrenewed for a whole duration: it takes over within a lease duration and one retry
    period of the leader's last renewal it saw, not a retry period later still."""

    def __init__(self, holder: Holder, identity: str, retry_s: float) -> None:
        self.holder = holder
        self.identity = identity
        self.retry_s = retry_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease", daemon=True)
        self._was_leading = False

    def leading(self) -> bool:
        return self.holder.leading()

    def start(self) -> None:
        self.holder.attempt()  # so the first tick already knows
        self._note()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.retry_s * 2)
        self.holder.release()

    def describe(self) -> dict[str, object]:
        return {
            "identity": self.identity,
            "leading": self.leading(),
            "holder": self.holder.holder,
            "election": "lease",
            "last_error": self.holder.last_error or None,
        }

    def _run(self) -> None:
        while not self._stop.wait(self._pause()):
            self.holder.attempt()
            self._note()

    def _pause(self) -> float:
        due = self.holder.due_s()
        if due is None:
            return self.retry_s
        return min(self.retry_s, due + 0.01)  # just past due: the record stood still long enough

    def _note(self) -> None:
        now = self.leading()
        if now != self._was_leading:
            log.info(
                "leading" if now else "standing by",
                identity=self.identity,
                holder=self.holder.holder,
                error=self.holder.last_error or None,
            )
            self._was_leading = now
