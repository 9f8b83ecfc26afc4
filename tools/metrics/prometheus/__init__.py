"""Readings from Prometheus: DCGM cards, vLLM/SGLang engines and llm-d's endpoint picker.

`PrometheusSource(settings).read(state)` merges one tick's readings into an observation;
`check_queries(settings)` has Prometheus parse every configured query. See docs/metrics.md.
"""

from typing import Protocol

from tools.metrics.prometheus.check import check_queries
from tools.metrics.prometheus.settings import PrometheusSettings
from tools.metrics.prometheus.source import PrometheusSource, TickReport

__all__ = [
    "PrometheusSettings",
    "PrometheusSource",
    "TickReport",
    "check_queries",
    "source_from_config",
]


class _MetricsSection(Protocol):
    @property
    def prometheus(self) -> PrometheusSettings: ...


def source_from_config(metrics: _MetricsSection) -> PrometheusSource:
    """The composition root's entry (`metrics.sources: [prometheus]` in steward.yaml)."""
    return PrometheusSource(metrics.prometheus)
