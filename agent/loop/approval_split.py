"""Split a deliberation's answer: what the guard allows runs now, what needs approval waits.

A model's answer to a question of judgment may mix actions the policy allows with actions that
need a person (a scale-up the load needs beside a drain that text in the cluster asked for).
Held together, the whole answer would wait for a person, and the allowed capacity with it:
injected text could delay legitimate capacity. So the guard splits such an answer (agent/loop/
nodes.py): the decision keeps the allowed and the denied actions and acts on them at once; the
actions that need approval go on as a decision of their own (its own decision id, which is its
approval id for `steward approve` / `steward deny`), judged again by the guard on a fresh
observation, and waiting in the approval inbox. Each decision's log records (intent, verdicts,
execution, outcome) cover exactly its own actions; each rationale names the other decision.

Kept whole: the answers whose actions go together. A rotation (one `rotate_mode`, whose steps
run as one transaction, and whatever the model proposed beside it) and a lending answer (the
scale-down that frees cards and the scale-up that takes them) are never split: they wait, or
run, as one.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.approvals.asked import held_for_a_person
from agent.audit import new_decision_id
from agent.loop.state import Decision, SplitPart
from agent.planners.question import QuestionKind
from policies.judgement import Verdict
from policies.model import Policy
from tools.actions import Plan, joined_notes
from tools.model import ClusterState

SPLIT_KINDS: frozenset[QuestionKind] = frozenset({"anomaly", "marked"})
"""The questions whose answers are split (module docstring: rotations and lending are not)."""
RULE_ID = "approval.split"
"""The rule id of the guard's verdict that keeps a split-off action waiting for a person."""


@dataclass(frozen=True)
class Split:
    """What the guard's split gives: the decision's own plan and verdicts, and the part that
    waits as a decision of its own."""

    plan: Plan
    verdicts: tuple[Verdict, ...]
    waiting: SplitPart


def splits(d: Decision, verdicts: tuple[Verdict, ...]) -> Split | None:
    """The split of `d`'s plan, or None when it stays whole: not a deliberation's answer, a
    question whose actions go together, a dry run, or nothing that both runs and waits."""
    asked = d.deliberation
    if d.plan is None or asked is None or d.dry_run or asked.question.kind not in SPLIT_KINDS:
        return None
    waits = [v for v in verdicts if v.decision == "needs_approval"]
    if not waits or not any(v.decision == "allow" for v in verdicts):
        return None
    kept = [v for v in verdicts if v.decision != "needs_approval"]
    part_id = new_decision_id()
    held = ", ".join(v.action.describe() for v in waits)
    plan = d.plan.model_copy(
        update={
            "actions": tuple(v.action for v in kept),
            "rationale": joined_notes(
                [d.plan.rationale, f"{held} need(s) approval: waiting as decision {part_id}"]
            ),
        }
    )
    waiting = d.plan.model_copy(
        update={
            "actions": tuple(v.action for v in waits),
            "rationale": joined_notes(
                [
                    f"split from decision {d.decision_id}, which ran the rest of the answer at "
                    "once: these actions need approval",
                    d.plan.rationale,
                ]
            ),
        }
    )
    return Split(
        plan=plan,
        verdicts=tuple(v.model_copy(update={"index": i}) for i, v in enumerate(kept)),
        waiting=SplitPart(decision_id=part_id, split_from=d.decision_id, plan=waiting),
    )


def still_waits(v: Verdict, split_from: str, policy: Policy, state: ClusterState) -> Verdict:
    """The guard's verdict, on a fresh observation, on an action split off to wait: it needed
    approval when proposed, so it waits for a person even if the policy would allow it now; a
    denied one stays denied, with its reason."""
    why = f"needed approval when decision {split_from} proposed it"
    return held_for_a_person(v, RULE_ID, why, policy, state)
