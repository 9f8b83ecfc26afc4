"""Exceptions of the tools layer: what the cluster and its backends can raise.

    StewardError
    ├── TemporaryError        a retry may fix it (timeouts, 409, 429, 5xx, a flapping probe)
    │   └── BackendUnavailable
    └── PermanentError        a retry will not fix it
        ├── InvalidInput      bad input: a scenario file, an action naming nothing that exists
        ├── ActionFailed      the backend refused or could not carry out an action
        └── Fenced            this replica does not lead (any more): it may not change anything

tenacity retries `TemporaryError` only.
"""

from __future__ import annotations


class StewardError(Exception):
    """Base of every error Steward raises on purpose."""


class TemporaryError(StewardError):
    """Transient: the same call may succeed later."""


class BackendUnavailable(TemporaryError):
    """The backend (API server, simulator) did not answer in time or answered 5xx/429."""


class PermanentError(StewardError):
    """Retrying will not help."""


class InvalidInput(PermanentError):
    """Input that cannot be used as given; the message names the place and the field."""


class ActionFailed(PermanentError):
    """The backend could not carry out an action (a missing target, a refused eviction)."""


class Fenced(PermanentError):
    """A change was refused because this replica does not hold leadership now (its Lease
    lapsed, or another replica leads): it may observe, never act."""
