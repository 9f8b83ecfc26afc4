"""The policy engine: `judge(plan, state, policy, history)` — the only door to acting.

Pure and fast: no I/O, no clock (`now` defaults to the observation's time), no backend. Every
action of a plan gets a `Verdict` — allow, deny or needs_approval — with the rule ids that
decided it and one human sentence; a denied scale says what would have passed instead. Actions
are judged in plan order against the state the earlier actions leave (a ledger), so the plan's
combined effect is judged too: two scale-downs that cross a minimum together, a drain and a
scale that leave a serving pool without a ready replica, more cards changed than the blast
radius. Actions waiting for approval count as if approved, so approving them cannot break a
limit the allowed ones respect; the allowed ones must also hold without them.

Preemption by priority (policies.rules.priority) is judged on the plan too: a scale-down that a
higher-priority pool's scale-up later in the plan takes the cards of may pass the rules that keep
a busy pool from shrinking, only if both actions pass every other rule. When one of them does not,
the offer is withdrawn and the plan judged again without it (a finding says why).

Rule ids are listed in RULE_IDS; approval.<name> and window.<name> come from the policy.
"""

from __future__ import annotations

from datetime import datetime

from policies.durations import aware
from policies.history import History
from policies.judgement import Decision, Finding, Judgement, Verdict
from policies.model import Policy, Window
from policies.plan_findings import Found, finding_of, merged, withdrawn_offer
from policies.rules import (
    approvals,
    budgets,
    cooldowns,
    modes,
    nodes,
    placement,
    pools,
    priority,
    protection,
    slo,
    targets,
    windows,
)
from policies.rules.checks import on_ledger
from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger, effect_of
from tools.actions import Action, DrainNode, NoOp, Plan, RotateMode, ScaleWorkload
from tools.effects import Effect, action_key
from tools.model import ClusterState

__all__ = ["RULE_IDS", "Decision", "Finding", "Judgement", "Verdict", "judge"]

NOOP = "noop.always_allowed"
WITHIN = "policy.within_limits"
COMBINED = "plan.combined_effect"
_LIMIT_RULES = {
    pools.MAX_CARDS,
    pools.MIN_CARDS,
    pools.TOTAL_CARDS,
    pools.MIN_READY,
    pools.IDLE_BEFORE_ZERO,
    protection.NEVER_BELOW_CURRENT,
}
RULE_IDS: tuple[str, ...] = (
    NOOP,
    WITHIN,
    targets.ACTION_INVALID,
    targets.TARGET_UNKNOWN,
    targets.POOL_UNMANAGED,
    pools.MAX_CARDS,
    pools.MIN_CARDS,
    pools.TOTAL_CARDS,
    pools.MIN_READY,
    pools.IDLE_BEFORE_ZERO,
    priority.PRIORITY_PREEMPTION,
    protection.NEVER_BELOW_CURRENT,
    protection.NEVER_DRAINED,
    nodes.LAST_OF_POOL,
    nodes.LAST_OF_MODE,
    cooldowns.DUPLICATE,
    cooldowns.BY_TARGET,
    "cooldown.<action type>",
    budgets.ACTIONS_PER_HOUR,
    budgets.BLAST_RADIUS,
    placement.UNSCHEDULABLE,
    placement.SELECTOR,
    placement.GPU_MODEL,
    slo.QUEUE_WAIT,
    modes.ALREADY_ACTIVE,
    modes.MIN_DWELL,
    modes.LINK_FRACTION,
    modes.GID_INDEX,
    COMBINED,
    "window.<name>",
    "approval.<name>",
)


def judge(
    plan: Plan,
    state: ClusterState,
    policy: Policy,
    history: History,
    now: datetime | None = None,
) -> Judgement:
    """Judge every action of `plan` against `state` under `policy`, given what was done before.

    `now` defaults to `state.observed_at` (a naive time is taken as UTC). The result lists
    one verdict per action, in order, and the plan-level findings.
    """
    drained = frozenset(a.node for a in plan.actions if isinstance(a, DrainNode))
    ctx = Context(
        state=state,
        policy=policy,
        history=history,
        now=aware(now or state.observed_at),
        nodes_of_interest=drained,
        proposed_by_model=plan.model is not None or plan.planner == "llm",
    )
    offers = priority.offers(plan, state, policy)
    withdrawn: list[Found] = []
    while True:
        books = _Books(ctx, plan, offers)
        verdicts = [books.judge(index, action) for index, action in enumerate(plan.actions)]
        failed = [
            offer
            for offer in offers.values()
            if offer.index in books.waived
            and (
                verdicts[offer.index].decision != "allow"
                or verdicts[offer.beneficiary].decision != "allow"
            )
        ]
        if not failed:
            break
        for offer in failed:  # each pass drops at least one offer: at most len(offers) passes
            del offers[offer.index]
            withdrawn.append(withdrawn_offer(offer, verdicts))
    return Judgement.model_construct(
        now=ctx.now, verdicts=tuple(verdicts), findings=merged([*books.findings, *withdrawn])
    )


class _Books:
    """The running account of one plan: the observed state (base), the state after the allowed
    actions (committed) and after those plus the ones waiting for approval (pending)."""

    def __init__(self, ctx: Context, plan: Plan, offers: dict[int, priority.Offer]) -> None:
        self.ctx = ctx
        self.plan = plan
        self.offers = offers
        self.waived: dict[int, list[Denial]] = {}
        """Scale-downs let through by a preemption offer: the denials it overrode."""
        self.base = Ledger.of(ctx.state, ctx.totals)
        self.committed = self.base.fork()
        self.pending = self.committed  # its own ledger from the first action sent for approval
        self.findings: list[Found] = []
        self._on_committed: Effect | None = None
        self._on_pending: Effect | None = None
        """The last judged action's effect on the committed and the pending ledger, reused to
        commit it (None: not worked out for this action)."""

    def judge(self, index: int, action: Action) -> Verdict:
        self._on_committed = self._on_pending = None
        verdict = self._verdict(index, action, suggest=True)
        if verdict.decision == "deny" or type(action) is NoOp:
            return verdict
        key = action_key(action)
        if verdict.decision == "needs_approval" and self.pending is self.committed:
            self.pending = self.committed.fork()
            self._on_pending = None
        if verdict.decision == "allow":
            self.committed.commit(index, key, self._effect(action, self.committed))
        if self.pending is not self.committed:
            waiting = verdict.decision == "needs_approval"
            self.pending.commit(index, key, self._effect(action, self.pending), diverge=waiting)
        return verdict

    def _effect(self, action: Action, ledger: Ledger) -> Effect:
        known = self._on_committed if ledger is self.committed else self._on_pending
        return known if known is not None else effect_of(action, self.ctx, ledger)

    def _verdict(self, index: int, action: Action, *, suggest: bool) -> Verdict:
        if type(action) is NoOp:
            return _verdict(index, action, "allow", (NOOP,), f"Allowed: {_describe(action)}.")
        denials = targets.check(action, self.ctx)
        if not denials:
            denials = self._denials(index, action, record=suggest)
        offer = self._offer(index, action, denials) if self.offers else None
        if offer is not None:
            self.waived[index] = denials
            denials = []
        if denials:
            return self._denied(index, action, denials, suggest=suggest)
        rules = approvals.required(action, self.ctx)
        if rules:
            groups = tuple(dict.fromkeys(g for r in rules for g in r.approvers))
            why = ", ".join(_rule_text(r.name, r.window) for r in rules)
            message = f"Needs approval by {' or '.join(groups)} under {why}: {_describe(action)}."
            rule_ids = tuple(r.rule_id for r in rules)
            return _verdict(index, action, "needs_approval", rule_ids, message, approvers=groups)
        if offer is not None:
            overridden = "; ".join(f"{d.rule_id}: {d.message}" for d in self.waived[index])
            message = (
                f"Allowed by priority: {offer.message} (overrides {overridden}): "
                f"{_describe(action)}."
            )
            return _verdict(index, action, "allow", (priority.PRIORITY_PREEMPTION,), message)
        return _verdict(index, action, "allow", (WITHIN,), f"Allowed: {_describe(action)}.")

    def _offer(self, index: int, action: Action, denials: list[Denial]) -> priority.Offer | None:
        """The preemption offer that lets this very action past `denials`, if any."""
        offer = self.offers.get(index)
        if offer is None or not denials or self.plan.actions[index] is not action:
            return None  # an alternative judged for `allowed_instead` gets no offer
        if any(d.rule_id not in priority.WAIVABLE for d in denials):
            return None
        return offer

    def _denied(
        self, index: int, action: Action, denials: list[Denial], *, suggest: bool
    ) -> Verdict:
        rule_ids: tuple[str, ...]
        if len(denials) == 1:  # the usual denial (the blast radius, a cooldown): said as it is
            only = denials[0]
            rule_ids, message, retry_at = (only.rule_id,), "Denied: " + only.message, only.retry_at
        else:
            rule_ids = tuple(dict.fromkeys(d.rule_id for d in denials))
            message = "Denied: " + "; ".join(dict.fromkeys(d.message for d in denials))
            # Rules a preemption waives (a busy pool's) do not say when to look again: the
            # others do — once a cooldown ends the same pair may pass as a preemption.
            binding = [d for d in denials if d.rule_id not in priority.WAIVABLE] or denials
            times = [d.retry_at for d in binding if d.retry_at is not None]
            retry_at = max(times) if len(times) == len(binding) else None
        instead = None
        if suggest and type(action) is ScaleWorkload and targets.ACTION_INVALID not in rule_ids:
            instead, note = self._instead(index, action, denials)
            message += note
        return _verdict(
            index, action, "deny", rule_ids, message + ".", instead=instead, retry_at=retry_at
        )

    def _denials(self, index: int, action: Action, *, record: bool) -> list[Denial]:
        ctx, pending = self.ctx, self.pending
        found: list[Found] = []
        denials = cooldowns.check(action, ctx, pending)
        if denials and denials[0].rule_id == cooldowns.DUPLICATE:
            earlier = pending.keys[action_key(action)]
            found.append(finding_of(denials[0], (earlier, index)))
        if ctx.active_windows:
            denials += windows.check(action, ctx)
        if type(action) is RotateMode:
            denials += modes.check(action, ctx)
        committed = self.committed
        effect = effect_of(action, ctx, committed)
        self._on_committed = self._on_pending = effect
        checks = on_ledger(action)
        for check in checks:
            denials += check(action, effect, ctx, committed)
        # Unless the approvals in waiting touch something this action reads: the same answer.
        if pending is not committed and pending.diverges_for(action, effect, committed):
            effect = self._on_pending = effect_of(action, ctx, pending)
            for check in checks:
                denials += check(action, effect, ctx, pending)
        for denial in budgets.check(action, effect, ctx, pending):
            found.append(finding_of(denial, (index,)))
            denials.append(denial)
        combined = self._combined(action, denials)
        if combined is not None:
            denial, together_with = combined
            denials.append(denial)
            found.append(finding_of(denial, (*together_with, index)))
        if record:
            self.findings += found
        return denials

    def _combined(
        self, action: Action, denials: list[Denial]
    ) -> tuple[Denial, tuple[int, ...]] | None:
        """A limit crossed only together with earlier actions of the plan: one denial, and the
        earlier actions that changed the same pools."""
        if not self.pending.actions:
            return None
        for d in denials:
            if d.rule_id in _LIMIT_RULES:
                break
        else:
            return None  # no limit crossed at all (a plain loop: this runs for every action)
        base, ctx = self.base, self.ctx
        effect = effect_of(action, ctx, base)
        alone = {d.rule_id for d in pools.check(action, effect, ctx, base)}
        alone |= {d.rule_id for d in protection.check(action, effect, ctx, base)}
        crossed = [d for d in denials if d.rule_id in _LIMIT_RULES and d.rule_id not in alone]
        if not crossed:
            return None
        pools_hit = {change.workload.pool for change in effect.changes}
        earlier = tuple(
            sorted({i for p in pools_hit for i in self.pending.pool_actions.get(p, ())})
        )
        names = ", ".join(f"#{i + 1}" for i in earlier) or "earlier ones"
        message = f"only together with action(s) {names}: {crossed[0].message}"
        return Denial(COMBINED, message), earlier

    def _instead(
        self, index: int, action: ScaleWorkload, denials: list[Denial]
    ) -> tuple[ScaleWorkload | None, str]:
        """The nearest replica count every bound allows, if that count would itself pass, and
        a note for the message ('' when no bound says anything)."""
        lower, upper = 0, None
        for d in denials:
            if d.lower is None and d.upper is None:
                if d.rule_id != COMBINED:
                    return None, ""  # a rule that no replica count would satisfy
                continue
            if d.lower is not None and d.lower > lower:
                lower = d.lower
            if d.upper is not None and (upper is None or d.upper < upper):
                upper = d.upper
        workload = self.ctx.state.workload(action.workload)
        if workload is None or (upper is not None and lower > upper):
            return None, ""
        current = self.committed.desired_of(workload)
        asked = action.replicas
        replicas = max(lower, asked if upper is None else min(asked, upper))
        if replicas == current:
            return None, f". Would allow: no change from the current {current} replica(s)"
        candidate = ScaleWorkload(workload=action.workload, replicas=replicas, reason=action.reason)
        if self._verdict(index, candidate, suggest=False).decision == "deny":
            return None, ""
        bound = "at most" if replicas < asked else "at least"
        return candidate, f". Would allow: scale {action.workload} to {bound} {replicas}"


def _rule_text(name: str, window: Window | None) -> str:
    return f"{name} ({window.describe()})" if window else name


def _verdict(  # noqa: PLR0917 - one call shape, internal
    index: int,
    action: Action,
    decision: Decision,
    rule_ids: tuple[str, ...],
    message: str,
    instead: Action | None = None,
    approvers: tuple[str, ...] = (),
    retry_at: datetime | None = None,
) -> Verdict:
    # Every value is made here, of its declared type: nothing for validation to check.
    return Verdict.model_construct(
        index=index,
        action=action,
        decision=decision,
        rule_ids=rule_ids,
        message=message,
        allowed_instead=instead,
        approvers=approvers,
        retry_at=retry_at,
    )


def _describe(action: Action) -> str:
    try:
        return action.describe()
    except Exception:  # a hostile object may not even describe itself
        return type(action).__name__
