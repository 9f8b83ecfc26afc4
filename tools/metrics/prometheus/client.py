"""A small client of the Prometheus HTTP API: instant queries and parse-only checks.

`query()` asks /api/v1/query and returns the instant vector with the evaluation time Prometheus
stamped on it. A connection failure, a timeout, 429 or 5xx is `PrometheusUnavailable`, a
`TemporaryError` retried with tenacity; a query Prometheus refuses (400 bad_data, 422
execution) is `QueryRefused`, carrying Prometheus's own error text, and is not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from tools.errors import PermanentError, TemporaryError


class PrometheusUnavailable(TemporaryError):
    """Prometheus did not answer, or answered 429/5xx."""


class QueryRefused(PermanentError):
    """Prometheus refused the query; the message is its own error."""


@dataclass(frozen=True)
class Vector:
    """The answer to one instant query: series as (labels, value) and when it was evaluated.

    A dataclass, not a pydantic model: its tens of thousands of label sets come from
    Prometheus's JSON as they are, and validating them again would cost more than the join."""

    evaluated_at: float
    """POSIX seconds, on Prometheus's clock."""
    series: list[tuple[dict[str, str], float]]


class PrometheusClient:
    """Instant queries over one kept-alive HTTP connection pool."""

    def __init__(self, url: str, timeout_s: float, attempts: int = 2) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.attempts = attempts
        self._http = httpx.Client(base_url=self.url, timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    def query(self, expr: str, at: float | None = None) -> Vector:
        """Evaluate `expr` now (Prometheus's now), or at POSIX time `at`; raises
        PrometheusUnavailable or QueryRefused."""
        params = {"query": expr, "timeout": f"{int(self.timeout_s * 1000)}ms"}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return vector_of(self._retrying("/api/v1/query", params), expr, at)

    def check(self, expr: str) -> None:
        """Ask Prometheus to parse `expr` without evaluating it (/api/v1/format_query)."""
        self._retrying("/api/v1/format_query", {"query": expr})

    def _retrying(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        for attempt in Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_fixed(0.2),
            retry=retry_if_exception_type(PrometheusUnavailable),
            reraise=True,
        ):
            with attempt:
                return self._get(path, params)
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        try:
            response = self._http.post(path, data=params)
        except httpx.TimeoutException as exc:
            raise PrometheusUnavailable(
                f"Prometheus at {self.url} did not answer within {self.timeout_s:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise PrometheusUnavailable(f"cannot reach Prometheus at {self.url}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise PrometheusUnavailable(
                f"Prometheus at {self.url} answered {response.status_code}: {_error(response)}"
            )
        if response.status_code >= 400:
            raise QueryRefused(_error(response))
        body: dict[str, Any] = response.json()
        if body.get("status") != "success":
            raise QueryRefused(_error(response))
        # An empty vector carries no evaluation time: the response's Date header stands in.
        body["_now"] = _date(response)
        return body


def vector_of(body: dict[str, Any], expr: str, at: float | None = None) -> Vector:
    """The instant vector of an /api/v1/query answer's decoded JSON (`at`: the time asked
    for, which dates an empty answer; else the response's Date, `_now`)."""
    data = body.get("data", {})
    if data.get("resultType") != "vector":
        raise QueryRefused(
            f"the query gives a {data.get('resultType')}, not an instant vector: {expr}"
        )
    series: list[tuple[dict[str, str], float]] = []
    evaluated = 0.0
    for item in data.get("result", ()):
        stamp, text = item["value"]
        evaluated = float(stamp)
        series.append((item["metric"], float(text)))
    if not series:
        evaluated = float(body.get("_now", 0.0)) if at is None else at
    return Vector(evaluated_at=evaluated, series=series)


def _error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or f"HTTP {response.status_code}"
    return f"{body.get('errorType', 'error')}: {body.get('error', response.text[:300])}"


def _date(response: httpx.Response) -> float:
    from email.utils import parsedate_to_datetime

    header = response.headers.get("date")
    if not header:
        return 0.0
    return parsedate_to_datetime(header).timestamp()
