"""Readings from Prometheus: DCGM cards, vLLM/SGLang engines and llm-d's endpoint picker.

`PrometheusSource(settings).read(state)` merges one tick's readings into an observation;
`check_queries(settings)` has Prometheus parse every configured query. See docs/metrics.md.
"""

from tools.metrics.prometheus.check import check_queries
from tools.metrics.prometheus.settings import PrometheusSettings
from tools.metrics.prometheus.source import PrometheusSource, TickReport

__all__ = ["PrometheusSettings", "PrometheusSource", "TickReport", "check_queries"]
