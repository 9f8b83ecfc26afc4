"""The plan-level findings of a judgement: made as the engine judges, merged when it is done.

A finding names a rule, says what it found and which actions of the plan it concerns: a
duplicate target, a budget that stopped actions, a limit crossed only together with earlier
actions, a preemption offer withdrawn. The budget rules give one finding for the whole plan,
listing every action they stopped.
"""

from __future__ import annotations

from policies.judgement import Finding, Verdict
from policies.rules import budgets, priority
from policies.rules.ledger import Denial

Found = tuple[str, str, tuple[int, ...]]
"""A plan-level finding in the making: rule id, message, plan positions."""
BUDGET_RULES = {budgets.ACTIONS_PER_HOUR, budgets.BLAST_RADIUS}


def withdrawn_offer(offer: priority.Offer, verdicts: list[Verdict]) -> Found:
    taker, lender = verdicts[offer.beneficiary], verdicts[offer.index]
    why = (
        f"action #{offer.beneficiary + 1} is {taker.decision} ({', '.join(taker.rule_ids)})"
        if taker.decision != "allow"
        else f"action #{offer.index + 1} itself is {lender.decision} ({', '.join(lender.rule_ids)})"
    )
    message = f"no preemption by priority for action #{offer.index + 1}: {why}"
    return priority.PRIORITY_PREEMPTION, message, (offer.index, offer.beneficiary)


def merged(findings: list[Found]) -> tuple[Finding, ...]:
    """One finding per budget rule (listing every action it stopped); others as they are."""
    groups: dict[str, list[Found]] = {}
    order: list[list[Found]] = []
    for found in findings:
        rule_id = found[0]
        if rule_id in BUDGET_RULES and rule_id in groups:
            groups[rule_id].append(found)
            continue
        group = [found]
        order.append(group)
        if rule_id in BUDGET_RULES:
            groups[rule_id] = group
    merged = []
    for group in order:
        rule_id, message, _ = group[0]
        if len(group) > 1:
            message += f" (and {len(group) - 1} more stopped)"
        actions = tuple(i for _, _, indices in group for i in indices)
        merged.append(Finding(rule_id=rule_id, message=message, actions=actions))
    return tuple(merged)


def finding_of(denial: Denial, actions: tuple[int, ...]) -> Found:
    return denial.rule_id, denial.message, actions
