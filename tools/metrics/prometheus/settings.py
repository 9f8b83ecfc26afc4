"""`PrometheusSettings`: where Prometheus is and what to ask it (steward.yaml `metrics.prometheus`).

Every query of tools.metrics.prometheus.queries can be replaced by name under `queries`, and
the timestamp query that dates its samples under `timestamps`; an empty string turns a family
off (the readings it would fill are left as the backend gave them). Unknown family names are
refused when the settings are loaded, so a typo never silently keeps the default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.metrics.prometheus.queries import FAMILIES


class PrometheusSettings(BaseModel):
    """How to reach Prometheus and what to ask it each tick."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = "http://127.0.0.1:9090"
    """Base URL of the Prometheus HTTP API (without /api/v1)."""
    timeout_s: float = Field(default=5.0, gt=0, le=120)
    """Per request: the HTTP timeout, also sent as the query's own `timeout`."""
    attempts: int = Field(default=2, ge=1, le=10)
    """Tries per query for temporary failures (timeouts, 429, 5xx) before its readings go stale."""
    staleness_s: float = Field(default=90.0, gt=0)
    """A sample older than this (by Prometheus's clock) is stale."""
    window: str = "5m"
    """The range of rate() and histogram_quantile() in the default queries (`{window}`)."""
    queries: dict[str, str] = {}
    """Per family: a PromQL expression replacing the default (`{window}` is substituted)."""
    timestamps: dict[str, str] = {}
    """Per family: a PromQL expression whose values are the sample times of its series."""
    evaluate_at: Literal["prometheus", "observation"] = "prometheus"
    """When the queries are evaluated: `prometheus`, Prometheus's own now (a real cluster: a
    clock skew between the hosts then changes nothing); `observation`, the observation's time
    (`time=`), for a cluster whose clock is not the wall clock — the twin advanced tick by tick,
    whose exporters stamp their samples with its simulated time."""
    parallel: int = Field(default=4, ge=1, le=32)
    """Queries in flight at once."""
    rules: Literal["recorded", "raw"] = "recorded"
    """`recorded`: each default family reads the series Steward's recording rules record
    (tools/metrics/prometheus/rules.yaml, docker/prometheus-rule.yaml), already joined to
    workloads and aggregated; a family whose recorded series are absent (the rules not loaded,
    or not evaluated yet) is asked again over the raw series that tick. `raw`: the raw series
    only, joined here (`window` applies to them alone: the rules' window is their own)."""

    read_power: bool = False
    """Read each card's power (`DCGM_FI_DEV_POWER_USAGE`, the `power` family) every tick. Off by
    default: no decision reads it (a card's `power_w` stays as the backend gave it, missing on
    Kubernetes), and a fleet's 8,000 cards are 8,000 series a tick; `steward gpus` reads a
    host's cards' power from NVML."""

    @field_validator("queries", "timestamps")
    @classmethod
    def _known_families(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(FAMILIES))
        if unknown:
            raise ValueError(
                f"unknown metric famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                f"known: {', '.join(FAMILIES)}"
            )
        return value

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL, e.g. http://prometheus:9090")
        return value.rstrip("/")
