"""A small client of the Prometheus HTTP API: instant queries and parse-only checks.

`query()` asks /api/v1/query and returns the instant vector with the evaluation time Prometheus
stamped on it. A connection failure, a timeout, 429 or 5xx is `PrometheusUnavailable`, a
`TemporaryError` retried with tenacity; a query Prometheus refuses (400 bad_data, 422
execution) is `QueryRefused`, carrying Prometheus's own error text, and is not retried.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from tools.errors import PermanentError, TemporaryError
from tools.metrics.prometheus.vector import Vector


class PrometheusUnavailable(TemporaryError):
    """Prometheus did not answer, or answered 429/5xx."""


class QueryRefused(PermanentError):
    """Prometheus refused the query; the message is its own error."""


class PrometheusClient:
    """Instant queries over one kept-alive HTTP connection pool."""

    def __init__(self, url: str, timeout_s: float, attempts: int = 2) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.attempts = attempts
        self._http = httpx.Client(base_url=self.url, timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    def query(self, expr: str, at: float | None = None, columns: Iterable[str] = ()) -> Vector:
        """Evaluate `expr` now (Prometheus's now), or at POSIX time `at`, with the labels
        `columns` read down the answer; raises PrometheusUnavailable or QueryRefused (and
        ValueError on an answer that is not JSON)."""
        params = {"query": expr, "timeout": f"{int(self.timeout_s * 1000)}ms"}
        if at is not None:
            params["time"] = f"{at:.3f}"
        response = self._retrying("/api/v1/query", params)
        # An empty vector carries no evaluation time: the response's Date stands in.
        return vector_from(response.text, expr, _date(response) if at is None else at, columns)

    def check(self, expr: str) -> None:
        """Ask Prometheus to parse `expr` without evaluating it (/api/v1/format_query)."""
        response = self._retrying("/api/v1/format_query", {"query": expr})
        try:
            body = response.json()
        except ValueError as exc:
            raise PrometheusUnavailable(
                f"{self.url} answered {response.status_code} with something other than the "
                f"Prometheus API's JSON: {response.text.strip()[:120]!r}"
            ) from exc
        if not isinstance(body, dict) or body.get("status") != "success":
            raise QueryRefused(_error(response))

    def _retrying(self, path: str, params: dict[str, str]) -> httpx.Response:
        for attempt in Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_fixed(0.2),
            retry=retry_if_exception_type(PrometheusUnavailable),
            reraise=True,
        ):
            with attempt:
                return self._get(path, params)
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _get(self, path: str, params: dict[str, str]) -> httpx.Response:
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
        return response


def vector_from(text: str, expr: str, empty_at: float, columns: Iterable[str] = ()) -> Vector:
    """The instant vector of an /api/v1/query answer's text, decoded by `json` (`empty_at`
    dates one without series), with the labels `columns` read down it."""
    body = json.loads(text)
    if not isinstance(body, dict) or body.get("status") != "success":
        raise QueryRefused(_said(body, text))
    vector = vector_of(body, expr, empty_at)
    for name in columns:
        vector.column(name)
    return vector


def vector_of(body: dict[str, Any], expr: str, empty_at: float) -> Vector:
    """The instant vector of an /api/v1/query answer's decoded JSON."""
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
        evaluated = empty_at
    return Vector(evaluated, series)


def _error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or f"HTTP {response.status_code}"
    return _said(body, response.text)


def _said(body: object, text: str) -> str:
    """Prometheus's own error in an answer's decoded JSON (`text`, cut short, where none)."""
    if not isinstance(body, dict):
        return text.strip()[:300]
    return f"{body.get('errorType', 'error')}: {body.get('error', text[:300])}"


def _date(response: httpx.Response) -> float:
    from email.utils import parsedate_to_datetime

    header = response.headers.get("date")
    if not header:
        return 0.0
    return parsedate_to_datetime(header).timestamp()
