"""One holder at a time: a `coordination.k8s.io/v1` Lease, held and renewed through the API.

Two replicas of Steward for availability must never act at once. Each runs a `LeaseHolder`:
`attempt()` reads the Lease and creates it if missing, renews it if this replica holds it, takes
it over if its holder let it expire, and otherwise leaves it alone. Every write carries the
resourceVersion it read, so two replicas racing for an expired Lease cannot both win: the API
server answers the loser 409.

Renewal under a flaky API: a leader renews by writing the Lease it last wrote (one request; a
409 sends it back to read first, as Kubernetes' own elector does), each request bounded by a
quarter of the renew deadline, and a failed renewal is tried again after short jittered pauses
for as long as the Lease may still be its own (a lease duration and a retry period since its
last renewal). Past the renew deadline it no longer acts (the fence below), but a renewal that
comes through then ends the lapse without the lead moving to the other replica.

Fencing: `leading()` is true only while the last successful renewal is younger than the
renew deadline, which is shorter than the lease duration. A leader cut off from the API server
therefore stops acting before its Lease can expire and a standby can take over — it never acts
on a Lease someone else may hold by now. Expiry is judged as Kubernetes' own clients judge it:
another holder's Lease has expired when its record has not changed for a whole lease duration
as this process's monotonic clock counts — never by comparing wall clocks across machines.
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tools.backends.kubernetes.settings import KubernetesSettings

REQUEST_SHARE = 0.25
"""One request to the Lease may take at most this share of the renew deadline: a renewal that
hangs is given up early enough for others to be tried before the deadline."""


@dataclass(frozen=True)
class LeaseSettings:
    name: str = "steward-leader"
    namespace: str = "default"
    identity: str = "steward"
    duration_s: float = 15.0
    """How long a Lease stays valid after its last renewal (leaseDurationSeconds)."""
    renew_deadline_s: float = 10.0
    """A leader that has not renewed for this long stops acting (must be < duration_s)."""
    retry_s: float = 2.0
    """How often to try to renew, or to take over."""
    timeout_s: float = 2.0
    """How long one request to the API server may take (at most REQUEST_SHARE of the renew
    deadline): a renewal that hangs is given up, and tried again."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_s < self.renew_deadline_s < self.duration_s:
            raise ValueError(
                "lease timings need 0 < retry_s < renew_deadline_s < duration_s, got "
                f"{self.retry_s}, {self.renew_deadline_s}, {self.duration_s}"
            )

    @classmethod
    def of(cls, settings: KubernetesSettings, env: dict[str, str] | None = None) -> LeaseSettings:
        """steward.yaml's `kubernetes.leader_election`, with what it leaves to the pod: the
        namespace ($STEWARD_NAMESPACE) and the identity ($STEWARD_IDENTITY, else the host)."""
        env = dict(os.environ) if env is None else env
        e = settings.leader_election
        return cls(
            name=e.lease,
            namespace=e.namespace or env.get("STEWARD_NAMESPACE") or settings.namespace,
            identity=e.identity or env.get("STEWARD_IDENTITY") or socket.gethostname(),
            duration_s=float(e.lease_duration_s),
            renew_deadline_s=e.renew_deadline_s,
            retry_s=e.retry_period_s,
            timeout_s=min(settings.request_timeout_s, e.renew_deadline_s * REQUEST_SHARE),
        )


class LeaseHolder:
    """Holds the Lease for this replica (see the module docstring)."""

    def __init__(
        self,
        api: client.CoordinationV1Api,
        settings: LeaseSettings,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.settings = settings
        self._monotonic = monotonic
        self._now = now
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.renewal_retries = 0
        """Renewals tried again after a failure, while the Lease was still ours (a count)."""
        self._written: client.V1Lease | None = None
        """The Lease as this replica last wrote it (the server's answer): renewed in one write."""
        self._renewed_at: float | None = None
        """Monotonic time of the last successful create, renewal or takeover."""
        self.holder: str | None = None
        """Who holds the Lease, as last read."""
        self._seen: tuple[object, ...] | None = None
        self._seen_at = 0.0
        """The Lease's record as last read, and (monotonic) when it last changed: another
        holder's Lease has expired once its record stood still for a whole duration here."""
        self._seen_duration = settings.duration_s
        self.transitions = 0
        self.last_error = ""

    def leading(self) -> bool:
        """Whether this replica may act now (fenced by the renew deadline)."""
        if self._renewed_at is None:
            return False
        return self._monotonic() - self._renewed_at < self.settings.renew_deadline_s

    def due_s(self) -> float | None:
        """Seconds until another holder's Lease, as last read, will have stood unrenewed for a
        whole duration (when a standby should try to take over); None while this replica
        leads or no other holder was seen."""
        if self.leading() or self._seen is None or self._seen[0] in (None, ""):
            return None
        return max(0.0, self._seen_at + self._seen_duration - self._monotonic())

    def attempt(self) -> bool:
        """One round: create, renew or take over the Lease if this replica may; True when it
        holds the Lease afterwards. API errors are not raised: they leave leadership to lapse.

        A leader whose renewal fails (a 5xx, a 429, a timeout, a 409 from a write that raced
        its own) tries again after a short jittered pause (from a tenth of the retry period,
        growing to half of it), while the Lease may still be its own: until a lease duration
        and a retry period since its last renewal, the earliest a standby that saw that renewal
        can take the Lease over (a write after a takeover is refused, 409: the Lease is never
        held twice). One failed request in a flaky API must not hand the lead over (the other
        replica would take it, and both would call the model in turn). Past the renew deadline
        it does not act meanwhile (`leading()`, the fence)."""
        s = self.settings
        before = self._renewed_at
        held = self._attempt_once()
        pause = s.retry_s / 10
        while before is not None and self._renewed_at == before and self.holder == s.identity:
            if self._monotonic() - before + pause >= s.duration_s + s.retry_s:
                break  # a standby may hold it by now: the next round reads who does
            self._sleep(pause * self._rng.uniform(0.5, 1.5))
            self.renewal_retries += 1
            held = self._attempt_once()
            pause = min(pause * 1.5, s.retry_s / 2)
        return held

    def _attempt_once(self) -> bool:
        s = self.settings
        started = self._monotonic()
        if self._written is not None:  # ours when last written: one write renews it
            renewed = self._renew_written(started)
            if renewed is not None:
                return renewed
        try:
            lease = self.api.read_namespaced_lease(
                s.name, s.namespace, _request_timeout=s.timeout_s
            )
        except ApiException as exc:
            if exc.status == 404:
                return self._create(started)
            return self._failed(exc)
        except (HTTPError, OSError) as exc:
            return self._failed(exc)
        spec = lease.spec or client.V1LeaseSpec()
        self.holder = spec.holder_identity
        self.transitions = spec.lease_transitions or 0
        ours = spec.holder_identity == s.identity
        if not ours and not self._expired(spec):
            self._renewed_at = None
            self._written = None
            return False
        now = self._now()
        spec.holder_identity = s.identity
        spec.lease_duration_seconds = int(s.duration_s)
        spec.renew_time = now
        if not ours:
            spec.acquire_time = now
            spec.lease_transitions = self.transitions + 1
        lease.spec = spec
        try:
            written = self.api.replace_namespaced_lease(
                s.name, s.namespace, lease, _request_timeout=s.timeout_s
            )
        except ApiException as exc:
            return self._failed(exc)  # 409: another replica wrote first
        except (HTTPError, OSError) as exc:
            return self._failed(exc)
        self._held(started, spec, written)
        return True

    def _renew_written(self, started: float) -> bool | None:
        """Renew by writing the Lease as last written, without reading it first; None when
        the write met a 409 (someone wrote since: read, then decide)."""
        s = self.settings
        lease = self._written
        assert lease is not None and lease.spec is not None
        lease.spec.renew_time = self._now()
        try:
            written = self.api.replace_namespaced_lease(
                s.name, s.namespace, lease, _request_timeout=s.timeout_s
            )
        except ApiException as exc:
            if exc.status == 409:
                return None  # read who holds it now (a takeover clears `_written` there)
            return self._failed(exc)
        except (HTTPError, OSError) as exc:
            return self._failed(exc)
        self._held(started, lease.spec, written)
        return True

    def release(self) -> None:
        """Give the Lease up at a clean stop, so that a standby takes over at once."""
        if not self.leading():
            return
        s = self.settings
        try:
            lease = self.api.read_namespaced_lease(
                s.name, s.namespace, _request_timeout=s.timeout_s
            )
            if lease.spec is not None and lease.spec.holder_identity == s.identity:
                lease.spec.holder_identity = None
                lease.spec.renew_time = None
                self.api.replace_namespaced_lease(
                    s.name, s.namespace, lease, _request_timeout=s.timeout_s
                )
        except (ApiException, HTTPError, OSError) as exc:
            self.last_error = str(exc)
        self._renewed_at = None
        self._written = None

    def _create(self, started: float) -> bool:
        s = self.settings
        now = self._now()
        spec = client.V1LeaseSpec(
            holder_identity=s.identity,
            lease_duration_seconds=int(s.duration_s),
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        )
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=s.name, namespace=s.namespace), spec=spec
        )
        try:
            written = self.api.create_namespaced_lease(
                s.namespace, body, _request_timeout=s.timeout_s
            )
        except ApiException as exc:
            return self._failed(exc)  # 409: another replica created it first
        except (HTTPError, OSError) as exc:
            return self._failed(exc)
        self._held(started, spec, written)
        return True

    def _held(self, started: float, spec: Any, written: object) -> None:
        # Fencing counts from when the request was sent, not when its answer came back.
        self._renewed_at = started
        self.holder = spec.holder_identity
        self.last_error = ""
        self._written = written if isinstance(written, client.V1Lease) else None
        self._seen = None  # another holder's record, as last seen, is history now

    def _failed(self, exc: Exception) -> bool:
        self.last_error = f"{type(exc).__name__}: {getattr(exc, 'reason', None) or exc}"
        return self.leading()

    def _expired(self, spec: client.V1LeaseSpec) -> bool:
        if spec.holder_identity in (None, ""):
            return True
        record = (spec.holder_identity, spec.renew_time, spec.lease_transitions)
        self._seen_duration = float(spec.lease_duration_seconds or self.settings.duration_s)
        if record != self._seen:
            self._seen, self._seen_at = record, self._monotonic()
            return False
        return self._monotonic() - self._seen_at >= self._seen_duration
