"""What the source sends Prometheus: each default family's value series aggregated by the
join's labels and dated in Prometheus, an override's as value and timestamp series."""

from __future__ import annotations

from tools.metrics.prometheus import PrometheusSettings
from tools.metrics.prometheus.queries import PART, STAMP, resolve


def test_the_default_queries_keep_the_join_labels_and_join_on_their_times() -> None:
    """What is sent: a default family's value series aggregated by the join's labels and its
    scrape target (or pod), their time joined on; an override's as value and timestamp series."""
    families = {f.name: f for f in resolve(PrometheusSettings(window="5m", read_power=True))}
    power = families["power"].combined
    assert power.startswith(
        "max by (UUID, gpu, Hostname, node, kubernetes_node, memory_source, instance, job) "
        "(DCGM_FI_DEV_POWER_USAGE) + on (UUID, gpu, Hostname, node, kubernetes_node, "
        "memory_source, instance, job) group_left (steward_t) (0 * count_values by (UUID, gpu, "
        'Hostname, node, kubernetes_node, memory_source, instance, job) ("steward_t", min by '
        "(UUID, gpu, Hostname, node, kubernetes_node, memory_source, instance, job) "
        "(timestamp(DCGM_FI_DEV_POWER_USAGE))))"
    )
    assert PART not in power
    tokens = families["generation_tokens"].combined
    # A pod Prometheus renamed (`exported_pod`) is moved into `pod` before aggregating, and
    # outside `timestamp()`, which dates only a series straight from its selector.
    assert tokens.startswith(
        "sum by (pod, namespace, model_name) (label_replace(label_replace(rate("
    )
    assert '"pod", "$1", "exported_pod", "(.+)"), "namespace", "$1", "exported_namespace"' in tokens
    assert ") + on (pod, namespace, model_name) group_left (steward_t)" in tokens
    assert "label_replace(label_replace(timestamp({" in tokens
    overridden = resolve(PrometheusSettings(queries={"power": "DCGM_FI_DEV_POWER_USAGE"}))
    combined = next(f for f in overridden if f.name == "power").combined
    assert STAMP not in combined and f'"{PART}", "t"' in combined


def test_a_tick_reads_no_power_unless_asked() -> None:
    """No decision reads a card's power: the tick leaves it out (8,000 series at 1,000 nodes),
    and reads it when `read_power` or a query of its own asks for it."""
    assert "power" not in {f.name for f in resolve(PrometheusSettings())}
    assert "power" in {f.name for f in resolve(PrometheusSettings(read_power=True))}
    asked = resolve(PrometheusSettings(queries={"power": "DCGM_FI_DEV_POWER_USAGE"}))
    assert "power" in {f.name for f in asked}
