"""The Policy schema: what Steward may do to a cluster, written as data.

A policy is read from YAML (policies/loader.py) and validated here; unknown keys are refused at
every level. It holds the pools' card limits, the total card budget, the protected workloads,
cooldowns, the change budget, approval rules, who may approve and how long a request waits,
quiet hours, SLO targets, the reactive thresholds of the pools they size, and the preconditions
of a mode rotation. `Policy.contradictions()` finds what is well-formed but cannot hold (a pool
whose min_cards exceeds its max_cards, an approver group that does not exist); a policy with
contradictions cannot be built.

Times of day are local to `timezone` (an IANA name); durations read like `10m` or `1h30m`.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from functools import cached_property, lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from policies.durations import WEEKDAYS, Duration, Weekday, in_window
from tools.actions import Action
from tools.effects import direction, pools_touched
from tools.model import ClusterState

ActionType = Literal[
    "scale_workload",
    "place_replica",
    "cordon_node",
    "uncordon_node",
    "drain_node",
    "rotate_mode",
]
ApprovalDirection = Literal["up", "down", "to_zero", "any"]
ProposedBy = Literal["anyone", "model"]
RULE_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"

Path = tuple[str | int, ...]
"""Where a value sits in the policy document, e.g. ("pools", "render", "min_cards")."""


class Strict(BaseModel):
    """Base of every policy part: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class PoolPolicy(Strict):
    """Limits of one pool, in cards (desired replicas x cards per replica of its workloads)."""

    min_cards: int = Field(default=0, ge=0)
    max_cards: int = Field(ge=0)
    priority: int = 0
    """Higher wins when pools compete for cards (read by planners, not enforced here)."""
    idle_before_zero: Duration | None = None
    """How long the pool must have been idle before it may go to zero cards; unset: no wait."""
    gpu_models: tuple[str, ...] = ()
    """Card models the pool's replicas may be placed on; empty: any."""
    min_ready_replicas: int = Field(default=0, ge=0)
    """A serving pool keeps at least this many ready replicas (summed over its workloads)."""
    keep_loads: float = Field(default=1.0, ge=0)
    """A replica unneeded for this many of its model loads is given back (what reloading it
    would cost); to zero also only after no arrival for this long or the usual idle gap."""


class Budget(Strict):
    total_cards: int | None = Field(default=None, ge=0)
    """The most cards all pools together may ask for; unset: no total limit."""


class ChangeBudget(Strict):
    actions_per_hour: int | None = Field(default=None, ge=0)
    """Executed plus proposed actions in any sliding hour (NoOp not counted)."""
    cards_per_tick: int | None = Field(default=None, ge=0)
    """The blast radius: cards one plan may change in total."""
    cards_per_hour: int | None = Field(default=None, ge=0)
    """Cards changed (up or down) by executed and proposed actions in any sliding hour."""


class Cooldowns(Strict):
    """The least time between two actions on the same thing (see tools.effects.action_key)."""

    by_action: dict[ActionType, Duration] = {}
    """Per action type: e.g. two scale_workload actions on one workload."""
    by_target: dict[str, Duration] = {}
    """Per target name (a workload, node or mode): any two actions on it."""
    by_direction: dict[Literal["scale_up", "scale_down"], Duration] = {}
    """Per direction of a scale (scale_workload, place_replica): the least time since the last
    scale of the same workload, either way, before one in this direction — growth can follow
    quickly, shrinking waits (e.g. scale_up: 30s, scale_down: 5m)."""


class Window(Strict):
    """A daily span of local time, [start, end), on some weekdays.

    end < start wraps over midnight; end == start is the whole day.
    """

    start: time
    end: time
    days: tuple[Weekday, ...] = WEEKDAYS

    def contains(self, local: datetime) -> bool:
        return in_window(local, self.start, self.end, self.days)

    def describe(self) -> str:
        return _span(self.start, self.end, self.days)


@lru_cache(maxsize=256)
def _span(start: time, end: time, days: tuple[Weekday, ...]) -> str:
    """A window as text (`09:00-18:00 on mon,tue`), worked out once per window: every verdict
    that needs an approval in a window quotes it."""
    on = "" if set(days) == set(WEEKDAYS) else " on " + ",".join(days)
    return f"{start:%H:%M}-{end:%H:%M}{on}"


class ApprovalRule(Strict):
    """Actions that need a human: by type, pool and direction, optionally only in a window."""

    name: str = Field(pattern=RULE_NAME)
    actions: tuple[ActionType, ...] = Field(min_length=1)
    pools: tuple[str, ...] = ()
    """Only actions touching one of these pools; empty: any pool (or none)."""
    direction: ApprovalDirection = "any"
    window: Window | None = None
    """Approval is needed only inside this window; unset: always."""
    approvers: tuple[str, ...] = Field(min_length=1)
    """Groups (defined under approvers.groups) whose members may approve."""
    serving_protected: bool = False
    """Only actions on a node that serves a protected workload (cordon, uncordon, drain)."""
    except_own_cordons: bool = False
    """Not for a node Steward itself cordoned (tools.model.Node.cordoned_by_steward): Steward
    lifts its own cordons when it needs the capacity again, while anyone else's cordon (or an
    uncordon of a node nobody cordoned, which a model has no reason to ask for) needs a
    person."""
    proposed_by: ProposedBy = "anyone"
    """`model`: only actions a language model proposed (the LLM planner's plans), whatever
    it read; `anyone`: whoever proposed them."""
    protected_or_serving: bool = False
    """Only actions on a protected workload or a workload of a serving pool (one that keeps
    min_ready_replicas)."""

    @property
    def rule_id(self) -> str:
        return f"approval.{self.name}"

    def matches(self, action: Action, state: ClusterState | None) -> bool:
        """Whether the rule covers the action (time windows aside).

        Without a state the pools and direction cannot be read: then only a rule without pool
        and direction filters matches.
        """
        if action.type not in self.actions:
            return False
        if state is None:
            return not self.pools and self.direction == "any"
        if self.pools and not pools_touched(action, state) & set(self.pools):
            return False
        if self.direction == "any":
            return True
        moved = direction(action, state)
        if self.direction == "down":
            return moved in ("down", "to_zero")
        return moved == self.direction


class QuietWindow(Window):
    """A time when Steward may only add capacity (scale_up_only) or do nothing at all."""

    name: str = Field(pattern=RULE_NAME)
    allow: Literal["scale_up_only", "nothing"]

    @property
    def rule_id(self) -> str:
        return f"window.{self.name}"


class SloTarget(Strict):
    """A pool's latency targets. `ttft_s` (and `itl_s`) are what a request is promised: a pool
    with them is sized by the capacity model; `queue_wait_s` stays a signal."""

    queue_wait_s: float | None = Field(default=None, gt=0)
    """Above this queue wait the pool is breaching its SLO: it may not be scaled down."""
    ttft_s: float | None = Field(default=None, gt=0)
    """Time to first token a request is promised."""
    itl_s: float | None = Field(default=None, gt=0)
    """Mean inter-token latency a request is promised."""

    @model_validator(mode="after")
    def _some_target(self) -> SloTarget:
        if self.queue_wait_s is None and self.ttft_s is None:
            raise ValueError("give ttft_s (and itl_s), or queue_wait_s; e.g. {ttft_s: 3}")
        return self


class Reactive(Strict):
    """What adds replicas at once to a pool sized by the capacity model, whatever the forecast
    said (agent.signals.slo's reactive layer): readings no forecast saw coming."""

    kv_usage: float = Field(default=0.8, gt=0, le=1)
    """KV-cache usage (0..1) at or above which the replicas' caches are nearly full."""
    ttft_share: float = Field(default=0.5, gt=0)
    """A short-window TTFT reading above this share of the pool's `ttft_s` reacts."""
    itl_share: float = Field(default=1.0, gt=0)
    """An inter-token latency reading above this share of the pool's `itl_s` reacts, as do more
    requests running per replica than the largest batch that meets `itl_s`."""
    waiting_readings: int = Field(default=2, ge=1)
    """Requests waiting on this many readings in a row react."""


class Group(Strict):
    members: tuple[str, ...] = ()
    """Principals: CLI user names or chat user ids, as `steward approve --as NAME` passes them."""
    description: str = ""


class Approvers(Strict):
    groups: dict[str, Group] = {}

    def allow_list(self) -> frozenset[str]:
        """Every principal of every group: the names `steward approve --as NAME` may claim."""
        return frozenset(m for group in self.groups.values() for m in group.members)


class ApprovalSettings(Strict):
    """How long a request for approval stays good."""

    expires_after: Duration = timedelta(minutes=30)
    """A request unanswered this long after it began to wait expires (refused, rule
    approval.expired); so does an approved action not carried out this long after it was
    approved (the agent was down): a human's yes is for the world they saw, not for any later
    one."""

    @field_validator("expires_after")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("approval.expires_after must be longer than 0; e.g. 30m")
        return value


class Rotation(Strict):
    """Preconditions of a rotation into a mode whose replicas span several nodes."""

    min_link_fraction: float = Field(default=0.0, ge=0, le=1)
    """Each path of each link between the mode's nodes must negotiate >= this share of nominal."""
    expected_gid_index: int | None = Field(default=None, ge=0)
    """The RoCE GID index every path must use; unset: the link's configured_gid_index."""
    min_dwell: Duration = timedelta(0)
    """The least time spent in the active mode before rotating out of it."""


class Activity(Strict):
    """When a pool counts as busy (for idle_before_zero)."""

    busy_utilization_percent: float = Field(default=5.0, ge=0, le=100)
    busy_queue_depth: float = Field(default=0.0, ge=0)


class Policy(Strict):
    """One whole policy. Build it with policies.loader.load_policy or Policy.model_validate."""

    version: Literal[1] = 1
    timezone: str = "UTC"
    """IANA time zone of every window, e.g. Europe/Madrid."""
    pools: dict[str, PoolPolicy]
    """Every pool Steward may act on; actions on workloads of other pools are denied."""
    budget: Budget = Budget()
    protected: tuple[str, ...] = ()
    """Workloads never scaled below their current replicas and whose nodes are never drained."""
    cooldowns: Cooldowns = Cooldowns()
    change_budget: ChangeBudget = ChangeBudget()
    approvals: tuple[ApprovalRule, ...] = ()
    approval: ApprovalSettings = ApprovalSettings()
    windows: tuple[QuietWindow, ...] = ()
    slo: dict[str, SloTarget] = {}
    reactive: Reactive = Reactive()
    """When the sized pools grow at once (see `Reactive`)."""
    approvers: Approvers = Approvers()
    rotation: Rotation = Rotation()
    activity: Activity = Activity()
    deliberate: tuple[ActionType, ...] = ()
    """Action types the model deliberates beside the loop, when one is configured, before they
    run (rotations, conflicting loans and anomalies always are); without a model the rules'
    actions run as they are."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r}; use an IANA name such as Europe/Madrid or UTC"
            ) from None
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Policy:
        context: Any = info.context
        if isinstance(context, dict) and context.get("defer_contradictions"):
            return self
        problems = self.contradictions()
        if problems:
            raise ValueError("; ".join(f"{_dotted(path)}: {msg}" for path, msg in problems))
        return self

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def local(self, when: datetime) -> datetime:
        """`when` in the policy's time zone (a naive time is taken as UTC)."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=ZoneInfo("UTC"))
        return when.astimezone(self.zone)

    def contradictions(self) -> list[tuple[Path, str]]:
        """What is well-formed but cannot hold, each with the place it sits."""
        problems: list[tuple[Path, str]] = []
        for name, pool in self.pools.items():
            if pool.min_cards > pool.max_cards:
                problems.append(
                    (
                        ("pools", name, "max_cards"),
                        f"pools.{name}.max_cards ({pool.max_cards}) is below min_cards "
                        f"({pool.min_cards}); raise max_cards or lower min_cards",
                    )
                )
            if pool.min_ready_replicas > 0 and pool.max_cards == 0:
                problems.append(
                    (
                        ("pools", name, "min_ready_replicas"),
                        f"pools.{name} must keep {pool.min_ready_replicas} ready replica(s) "
                        "but max_cards is 0",
                    )
                )
        total = self.budget.total_cards
        floor = sum(p.min_cards for p in self.pools.values())
        if total is not None and floor > total:
            problems.append(
                (
                    ("budget", "total_cards"),
                    f"budget.total_cards ({total}) is below the pools' min_cards together "
                    f"({floor})",
                )
            )
        groups = self.approvers.groups
        seen: set[str] = set()
        for i, rule in enumerate(self.approvals):
            if rule.name in seen:
                problems.append(
                    (("approvals", i, "name"), f"approval rule {rule.name!r} is defined twice")
                )
            seen.add(rule.name)
            for j, group in enumerate(rule.approvers):
                if group not in groups:
                    known = ", ".join(sorted(groups)) or "none defined"
                    problems.append(
                        (
                            ("approvals", i, "approvers", j),
                            f"approver group {group!r} of approval rule {rule.name!r} does not "
                            f"exist (groups: {known}); define it under approvers.groups",
                        )
                    )
            problems += self._unknown_pools(("approvals", i, "pools"), rule.pools)
        names: set[str] = set()
        for i, window in enumerate(self.windows):
            if window.name in names:
                message = f"window {window.name!r} is defined twice"
                problems.append((("windows", i, "name"), message))
            names.add(window.name)
        for name in self.slo:
            if name not in self.pools:
                problems.append((("slo", name), f"slo names pool {name!r}, which has no policy"))
        return problems

    def _unknown_pools(self, path: Path, pools: tuple[str, ...]) -> list[tuple[Path, str]]:
        known = ", ".join(sorted(self.pools))
        return [
            ((*path, j), f"pool {pool!r} is not under pools (pools: {known})")
            for j, pool in enumerate(pools)
            if pool not in self.pools
        ]

    def approval_rules_for(self, action: Action, state: ClusterState | None) -> list[ApprovalRule]:
        """The approval rules that cover an action, windows aside."""
        return [rule for rule in self.approvals if rule.matches(action, state)]

    def may_approve(
        self, principal: str, action: Action, state: ClusterState | None = None
    ) -> bool:
        """Whether `principal` may approve `action`.

        True when the principal is a member of an approver group of an approval rule that
        covers the action. Pass the state the action was judged on so that rules filtered by
        pool or direction can match; without it only unfiltered rules count. The time window
        is not checked: a request raised at 19:59 may still be approved at 20:01.
        """
        groups = self.approvers.groups
        return any(
            principal in groups[g].members
            for rule in self.approval_rules_for(action, state)
            for g in rule.approvers
            if g in groups
        )

    def approver_groups(self, action: Action, state: ClusterState | None) -> tuple[str, ...]:
        """The groups that may approve an action, in rule order, without repeats."""
        out: dict[str, None] = {}
        for rule in self.approval_rules_for(action, state):
            out.update(dict.fromkeys(rule.approvers))
        return tuple(out)


def _dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)
