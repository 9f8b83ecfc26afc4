"""The client's exceptions as Steward's errors, the one retry policy of every API call, and the
options every write carries (its timeout, and `dryRun=All` for a dry run).

429, 5xx, conflicts (409) and timeouts are temporary: retried with tenacity (bounded attempts,
jittered exponential waits). 403 is permanent and names the verb, resource and namespace the
service account lacks. 404 and 422 are permanent too: the name or the value is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from tools.errors import ActionFailed, BackendUnavailable, InvalidInput, PermanentError

T = TypeVar("T")
DRY_RUN = "All"
"""The `dryRun` value that has the API server validate a write and persist nothing."""
TEMPORARY_CODES = frozenset({409, 429, 500, 502, 503, 504})


def write_options(timeout: float, dry_run: bool) -> dict[str, Any]:
    """The keyword arguments of a mutating call: its timeout, and `dryRun=All` if asked."""
    options: dict[str, Any] = {"_request_timeout": timeout}
    if dry_run:
        options["dry_run"] = DRY_RUN
    return options


class Conflict(BackendUnavailable):
    """409: the object changed under us; re-read it and try again."""


def server_message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return str(exc.reason or exc.status)
    return str(body.get("message") or exc.reason or exc.status)


def translate(exc: Exception, verb: str, resource: str, namespace: str = "") -> Exception:
    """The Steward error for a failed call of `verb` on `resource` (in `namespace`)."""
    where = f" in namespace {namespace!r}" if namespace else " (cluster scope)"
    if isinstance(exc, ApiException):
        code = exc.status or 0
        msg = server_message(exc)
        if code == 403:
            return PermanentError(
                f"kubernetes: forbidden to {verb} {resource}{where}: {msg}; grant the service "
                "account this verb in its Role (docs/kubernetes.md lists what Steward needs)"
            )
        if code == 409:
            return Conflict(f"kubernetes: {verb} {resource}{where}: conflict ({msg}); retry")
        if code in TEMPORARY_CODES or code == 0:
            return BackendUnavailable(f"kubernetes: {verb} {resource}{where}: HTTP {code} ({msg})")
        if code == 404:
            return InvalidInput(f"kubernetes: {verb} {resource}{where}: not found ({msg})")
        return ActionFailed(f"kubernetes: {verb} {resource}{where}: HTTP {code} ({msg})")
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError | TimeoutError):
        return BackendUnavailable(f"kubernetes: {verb} {resource}{where}: {exc}")
    return exc


class Caller:
    """Runs API calls with the retry policy, counting attempts (for the fault tests)."""

    def __init__(self, attempts: int, max_wait_s: float) -> None:
        self.attempts = attempts
        self.max_wait_s = max_wait_s
        self.calls = 0
        self.retries = 0

    def __call__(
        self,
        fn: Callable[[], T],
        verb: str,
        resource: str,
        namespace: str = "",
        *,
        on_conflict: Callable[[], None] | None = None,
    ) -> T:
        """`fn()` retried on temporary errors; `on_conflict` runs before a retry after 409."""
        retrying = Retrying(
            retry=retry_if_exception_type(BackendUnavailable),
            stop=stop_after_attempt(self.attempts),
            wait=wait_random_exponential(multiplier=0.05, max=self.max_wait_s),
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                self.calls += 1
                if attempt.retry_state.attempt_number > 1:
                    self.retries += 1
                try:
                    return fn()
                except Exception as exc:
                    err = translate(exc, verb, resource, namespace)
                    if isinstance(err, Conflict) and on_conflict is not None:
                        on_conflict()
                    if err is exc:
                        raise
                    raise err from exc
        raise AssertionError("unreachable: tenacity reraises")
