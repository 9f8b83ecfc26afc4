"""`AssessSettings`: the thresholds assess reads signals with (SLO waits, hot and calm queues,
how old a reading may be); the loop fills the per-pool ones from the policy
(agent.planners.rule_settings.RulesSettings.from_policy)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AssessSettings(BaseModel):
    """Thresholds of assess; the loop fills the per-pool ones from the policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slo_wait_s: dict[str, float] = {}
    """Target queue wait per pool."""
    default_slo_wait_s: float = 30.0
    slo_ttft_s: dict[str, float] = {}
    """Per pool: the time-to-first-token target; a profiled workload of such a pool is sized by
    the capacity model (agent.signals.slo)."""
    slo_itl_s: dict[str, float] = {}
    """Per pool: the inter-token latency target."""
    default_itl_s: float = Field(default=0.1, gt=0)
    keep_loads: dict[str, float] = {}
    """Per pool: how long a replica must have been unneeded before it is given back, in model
    loads (the policy's pools.<pool>.keep_loads)."""
    default_keep_loads: float = Field(default=1.0, ge=0)
    reactive_kv: float = Field(default=0.8, gt=0, le=1)
    """KV-cache usage at or above this adds replicas at once (the reactive layer; the policy's
    reactive.kv_usage)."""
    reactive_ttft_share: float = Field(default=0.5, gt=0)
    """A TTFT reading above this share of the target adds replicas at once (reactive.ttft_share)."""
    reactive_itl_share: float = Field(default=1.0, gt=0)
    """An ITL reading above this share of the target adds replicas at once (reactive.itl_share)."""
    reactive_waiting_readings: int = Field(default=2, ge=1)
    """Requests waiting on this many readings in a row add replicas at once
    (reactive.waiting_readings)."""
    min_cards: dict[str, int] = {}
    """Per pool: the policy's minimum, so a scale-down the pool cannot take is not a finding."""
    idle_to_zero_s: dict[str, float] = {}
    """Per pool: idle time before scale-to-zero (absent: the pool never goes to zero)."""
    pending_release_s: float = Field(default=300.0, gt=0)
    """A replica that has found no node to run on for this long is given back (scaled away)
    rather than left pending forever while its workload counts it as coming."""
    hot_ratio: float = 1.0
    """Queue wait at or above this fraction of the SLO asks for more replicas."""
    hot_depth_per_replica: float = 8.0
    calm_ratio: float = 0.25
    """Queue wait below this fraction of the SLO (and a short queue) counts as calm."""
    calm_depth_per_replica: float = 1.0
    calm_s: float = 300.0
    """How long a queue stays calm before a replica is given back (the hysteresis)."""
    metric_max_age_s: float = 90.0
    """A reading older than this is stale, whatever its source says (steward.yaml's
    metrics.max_age_s): its workload or pool is held and a finding says so."""
    link_min_fraction: float = 0.4
    """A link path below this share of nominal is degraded (healthy GX10 rails negotiate 49 %)."""
    saturation: float = 0.85
    """Serving this share of a mode's aggregate peak counts as saturated."""
    mode_dwell_s: float = 600.0
    """How long demand must favour the other mode before a rotation is proposed."""
    mode_grace_s: float = 120.0
    """Demand that stops favouring a mode for less than this keeps its dwell running."""
