"""`check_queries`: every PromQL expression of the settings, parsed by Prometheus itself.

`steward config check` calls it so that a broken override is refused before the agent runs,
with the key it came from and Prometheus's own parse error — not discovered later as a family
whose readings are all missing.
"""

from __future__ import annotations

from tools.metrics.prometheus.client import PrometheusClient, PrometheusUnavailable, QueryRefused
from tools.metrics.prometheus.queries import resolve
from tools.metrics.prometheus.settings import PrometheusSettings

KEY = "metrics.prometheus"


def check_queries(
    settings: PrometheusSettings, client: PrometheusClient | None = None
) -> list[str]:
    """Problems, one line each naming the settings key; empty when every query parses."""
    own = client is None
    client = client or PrometheusClient(settings.url, settings.timeout_s, settings.attempts)
    problems: list[str] = []
    try:
        for family in resolve(settings):
            for kind, expr in (("queries", family.query), ("timestamps", family.timestamp)):
                if kind == "timestamps" and not expr:
                    continue
                try:
                    client.check(expr)
                except QueryRefused as exc:
                    overridden = family.name in getattr(settings, kind)
                    where = f"{KEY}.{kind}.{family.name}" + ("" if overridden else " (default)")
                    problems.append(f"{where}: Prometheus refuses {expr!r}: {exc}")
                    break  # a timestamp query made from a broken one says the same again
    except PrometheusUnavailable as exc:
        problems.append(
            f"{KEY}.url: cannot check the queries: {exc}; start Prometheus or fix the url"
        )
    finally:
        if own:
            client.close()
    return problems
