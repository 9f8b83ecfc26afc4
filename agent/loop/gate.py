"""The gate at execution: every action is judged again, on a fresh observation, before it runs.

The guard judged the plan when it was proposed; by the time act runs, a human may have answered
an hour later, the process may have been killed and restarted under another policy, a freeze
may have begun. So act asks the policy engine again, on the observation it is about to act on,
with the policy in force and the history as it is now, and runs only what that judgement allows:

- an action denied at proposal stays denied; one that waited for a human runs only if the human
  approved it, the approver may still approve it on the fresh state, and the approval has not
  expired (`approval.expires_after`: answered in time, and carried out in time after the answer);
- the actions left are judged together as one plan (windows, cooldowns, budgets, blast radius,
  limits, approval rules); an action allowed at proposal that now needs approval is refused
  (it is proposed again, and waits, on a later tick); any refusal sends the rest through again
  without it, so the combined effect judged is the one that will run;
- a rotation runs only while the advice that proposed it still holds (the demand that made
  rotating pay may be gone after the wait).

Pure: no I/O, the caller observes and writes the record (agent/loop/nodes.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.audit import GateVerdict
from agent.rotation.runner import advice_settings
from policies.durations import format_duration
from policies.engine import judge
from policies.history import History
from policies.judgement import Verdict
from policies.model import Policy
from tools.actions import Action, Plan, RotateMode
from tools.approval import Approval
from tools.model import ClusterState
from tools.modes import demand_from_state, rotation_gain

EXPIRED = "approval.expired"
NOT_GIVEN = "approval.not_given"
ADVICE = "rotation.advice"
WENT_BACK = "observation.older_than_decision"
GATE_RULE_IDS = (EXPIRED, NOT_GIVEN, ADVICE, WENT_BACK)
"""Rule ids only the gate gives (the engine's own ids come with its verdicts)."""


def at_execution(
    verdicts: Sequence[Verdict],
    approval: Approval | None,
    *,
    decided_at: datetime | None,
    state: ClusterState,
    policy: Policy,
    history: History,
    advice: bool = True,
    favoured_mode: str | None = None,
) -> tuple[GateVerdict, ...]:
    """One verdict per proposal, in order, as of `state` (which must be freshly observed).

    `decided_at` is the time of the observation the decision was made on (when it began to
    wait, for one that waited). A fresh observation older than that means the backend's state
    went back (a simulated cluster restored from its last save): nothing runs on it. `advice`
    re-checks that a rotation still pays (the loop's rotations, which a planner proposed
    because it did); off for a rotation a person asked for themselves. `favoured_mode` is the
    mode the loop's demand memory has favoured lately (within its grace): demand is noisy tick
    to tick, so a rotation the advice doubts on this one reading still runs while it holds."""
    now = state.observed_at
    settled: dict[int, GateVerdict] = {}
    candidates: list[int] = []
    for i, v in enumerate(verdicts):
        if v.decision == "deny":
            rules = ", ".join(v.rule_ids) or "policy"
            settled[i] = _deny(i, v.rule_ids, f"denied by {rules}: {v.message}", fresh=False)
        elif v.decision == "needs_approval":
            unapproved = _unapproved(i, approval, decided_at, now, policy)
            if unapproved is not None:
                settled[i] = unapproved
            else:
                candidates.append(i)
        else:
            candidates.append(i)
    while candidates:
        actions = tuple(verdicts[i].action for i in candidates)
        plan = Plan(actions=actions, rationale="judged again at execution", planner="gate")
        fresh = judge(plan, state, policy, history, now=now).verdicts
        judged = {
            i: _judged(
                i,
                verdicts[i],
                f,
                approval,
                state=state,
                policy=policy,
                advice=advice and favoured_mode != verdicts[i].action.target,
            )
            for i, f in zip(candidates, fresh, strict=True)
        }
        refused = [i for i, g in judged.items() if g.verdict == "deny"]
        if not refused:
            settled.update(judged)
            break
        for j in refused:  # each pass refuses at least one: at most len(verdicts) passes
            settled[j] = judged[j]
            candidates.remove(j)
    if decided_at is not None and now < decided_at:
        return tuple(_went_back(settled[i], now, decided_at, policy) for i in range(len(verdicts)))
    return tuple(settled[i] for i in range(len(verdicts)))


def _went_back(g: GateVerdict, now: datetime, decided_at: datetime, policy: Policy) -> GateVerdict:
    """Refuse what would run, or add the reason to a fresh refusal: the state went back."""
    if g.verdict == "deny" and not g.refused_at_execution:
        return g
    why = (
        f"the cluster as observed now ({_local(policy, now)}) is older than the observation the "
        f"decision was made on ({_local(policy, decided_at)}); its state went back, so nothing "
        "runs on it: the next tick decides anew"
    )
    if g.verdict == "deny":
        return _deny(g.index, (*g.rule_ids, WENT_BACK), f"{g.message}; {why}", fresh=True)
    return _deny(g.index, (WENT_BACK,), why, fresh=True)


def _unapproved(
    index: int,
    approval: Approval | None,
    waiting_since: datetime | None,
    now: datetime,
    policy: Policy,
) -> GateVerdict | None:
    """Why an action that waited for a human may not run, or None when its approval stands."""
    if approval is None or approval.answer == "denied":
        return _deny(index, (NOT_GIVEN,), "approval was not given", fresh=False)
    ttl = policy.approval.expires_after
    limit = format_duration(ttl)
    if approval.answer == "expired":
        since = f" since {_local(policy, waiting_since)}" if waiting_since else ""
        return _deny(
            index,
            (EXPIRED,),
            f"nobody answered within approval.expires_after ({limit}); it waited{since}",
            fresh=True,
        )
    if waiting_since is not None and approval.at > waiting_since + ttl:
        return _deny(
            index,
            (EXPIRED,),
            f"approved by {approval.principal} at {_local(policy, approval.at)}, after the request "
            f"expired at {_local(policy, waiting_since + ttl)} (approval.expires_after {limit})",
            fresh=True,
        )
    if now > approval.at + ttl:
        return _deny(
            index,
            (EXPIRED,),
            f"approved by {approval.principal} at {_local(policy, approval.at)} but not carried "
            f"out within approval.expires_after ({limit}); it is {_local(policy, now)} now",
            fresh=True,
        )
    return None


def _judged(
    index: int,
    proposed: Verdict,
    fresh: Verdict,
    approval: Approval | None,
    *,
    state: ClusterState,
    policy: Policy,
    advice: bool,
) -> GateVerdict:
    action = proposed.action
    if fresh.decision == "deny":
        return _deny(index, fresh.rule_ids, fresh.message, fresh=True)
    if fresh.decision == "needs_approval":
        if proposed.decision != "needs_approval" or approval is None:
            return _deny(
                index,
                fresh.rule_ids,
                f"needs approval now and none was given: {fresh.message}",
                fresh=True,
            )
        if not policy.may_approve(approval.principal, action, state):
            groups = ", ".join(policy.approver_groups(action, state)) or "an approver group"
            return _deny(
                index,
                fresh.rule_ids,
                f"{approval.principal} may not approve {action.describe()} now; it needs a member "
                f"of {groups}",
                fresh=True,
            )
        message = f"approved by {approval.principal} via {approval.channel}; {fresh.message}"
        return _allow(
            index, fresh.rule_ids, message, action, state=state, policy=policy, check_advice=advice
        )
    return _allow(
        index,
        fresh.rule_ids,
        fresh.message,
        action,
        state=state,
        policy=policy,
        check_advice=advice,
    )


def _allow(
    index: int,
    rule_ids: Sequence[str],
    message: str,
    action: Action,
    *,
    state: ClusterState,
    policy: Policy,
    check_advice: bool,
) -> GateVerdict:
    if check_advice and isinstance(action, RotateMode):
        advice = rotation_gain(state, demand_from_state(state), advice_settings(policy))
        if not advice.rotate or advice.target != action.target_mode:
            return _deny(
                index,
                (ADVICE,),
                f"rotating to {action.target_mode} no longer pays: {advice.reason}",
                fresh=True,
            )
    return GateVerdict(index=index, verdict="allow", rule_ids=tuple(rule_ids), message=message)


def _deny(index: int, rule_ids: Sequence[str], message: str, *, fresh: bool) -> GateVerdict:
    return GateVerdict(
        index=index,
        verdict="deny",
        rule_ids=tuple(rule_ids),
        message=message,
        refused_at_execution=fresh,
    )


def _local(policy: Policy, at: datetime | None) -> str:
    if at is None:
        return "?"
    local = policy.local(at)
    return f"{local:%H:%M} {local.tzname()}"
