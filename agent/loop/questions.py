"""Which parts of a decision need judgment, and the question each one puts to the model.

The fast path (the rules planner, inside the tick) decides routine things: how many replicas,
to and from zero, where a replica goes. Some things are not routine, and when a model is
configured they are taken out of the tick's plan and deliberated beside the loop
(agent/loop/deliberation.py):

- `rotation`: demand favours the other serving mode (the seeds' rule: a two-node mode must win
  at something two separate models cannot);
- `lending`: a higher-priority pool takes cards from a lower-priority pool that has demand of
  its own (their SLOs conflict; lending idle cards is routine);
- `anomaly`: a finding no rule fixes (a shared card counted twice, a link below its speed or on
  the wrong GID index, a capacity profile that drifted: a workload's replicas serving beyond
  +-25 % of its catalogue profile, which the online correction does not follow);
- `marked`: an action of a type the policy's `deliberate` list names.

Each question has a `key`, its premise: the same situation gives the same key on every tick, so
a question is asked once while it stands, and an answer that comes back after the key is gone
from a fresh observation is superseded. Without a model the rules' own actions run, as before.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agent.planners.question import Question
from agent.signals.model import Signals
from policies.model import Policy
from tools.actions import Action, Plan, RotateMode, ScaleWorkload
from tools.model import ClusterState

__all__ = ["Split", "drift_questions", "drifting", "split"]


class Split(BaseModel):
    """A rules plan split in two: what runs in this tick, and what is deliberated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    routine: Plan
    questions: tuple[Question, ...] = ()


def split(plan: Plan, state: ClusterState, signals: Signals, policy: Policy | None) -> Split:
    """Take the judgment questions out of the rules' `plan` (see the module docstring)."""
    questions: list[Question] = []
    taken: set[int] = set()
    actions = list(plan.actions)
    rotations = [i for i, a in enumerate(actions) if isinstance(a, RotateMode)]
    favoured = (
        signals.active_mode is not None  # none while a rotation is under way
        and signals.favoured_mode is not None
        and signals.favoured_mode != signals.active_mode
    )
    # Held only until the active mode has run its minimum: a question for later, not now.
    if rotations or (favoured and "would pay, but" not in plan.rationale):
        taken.update(rotations)
        questions.append(
            Question(
                kind="rotation",
                key=f"rotation:{signals.active_mode}->{signals.favoured_mode}",
                facts={
                    "active_mode": signals.active_mode,
                    "favoured_mode": signals.favoured_mode,
                    "because": signals.favoured_because,
                    "rules": "rotate" if rotations else "hold: " + plan.rationale[:300],
                },
                rules_actions=tuple(actions[i] for i in rotations),
            )
        )
    for group in _lendings(actions, signals):
        taker = actions[group[-1]]
        lenders = [actions[i] for i in group[:-1]]
        assert isinstance(taker, ScaleWorkload)
        names = ",".join(sorted(a.target for a in lenders))
        taken.update(group)
        questions.append(
            Question(
                kind="lending",
                key=f"lending:{taker.workload}<-{names}",
                facts={
                    "taker": taker.workload,
                    "lenders": [a.target for a in lenders],
                    "lenders_demand": {
                        a.target: (s.line() if (s := signals.workload(a.target)) else None)
                        for a in lenders
                    },
                    "taker_demand": (s.line() if (s := signals.workload(taker.workload)) else None),
                },
                rules_actions=tuple(actions[i] for i in group),
            )
        )
    anomalies = [
        *signals.shared_card_anomalies,
        *(f"{x.link}/{x.path}: {x.problem}" for x in signals.degraded_links),
    ]
    for text in anomalies:
        questions.append(Question(kind="anomaly", key=f"anomaly:{text}", facts={"finding": text}))
    questions += drift_questions(signals)
    marked = set(policy.deliberate) if policy is not None else set()
    rest = [i for i, a in enumerate(actions) if i not in taken and a.type in marked]
    if rest:
        taken.update(rest)
        what = [actions[i] for i in rest]
        questions.append(
            Question(
                kind="marked",
                key="marked:" + ";".join(a.describe() for a in what),
                facts={"actions": [a.describe() for a in what]},
                rules_actions=tuple(what),
            )
        )
    if not taken:
        return Split(routine=plan, questions=tuple(questions))
    kept = tuple(a for i, a in enumerate(actions) if i not in taken)
    return Split(routine=plan.model_copy(update={"actions": kept}), questions=tuple(questions))


def drift_questions(signals: Signals) -> list[Question]:
    """One anomaly question per workload whose capacity profile drifted, for as long as the
    drift goes on (its key names the workload alone, so it stands from tick to tick). The rules
    have no fix for it (their correction stays within +-25 %): their answer is no action."""
    out: list[Question] = []
    for w in signals.workloads:
        view = w.slo
        if view is None or not view.drifting:
            continue
        finding = view.drift or (
            f"{w.workload}: replicas still serve beyond +-25 % of the capacity profile"
        )
        out.append(
            Question(
                kind="anomaly",
                key=f"anomaly:profile-drift:{w.workload}",
                facts={"finding": finding, "workload": w.workload, "demand": w.line()},
            )
        )
    return out


def drifting(signals: Signals) -> bool:
    """A workload's capacity profile drifted: a question for a model, when one deliberates."""
    return any(w.slo is not None and w.slo.drifting for w in signals.workloads)


def _lendings(actions: list[Action], signals: Signals) -> list[list[int]]:
    """Runs of scale-downs followed by the scale-up they free cards for (the rules' preemption
    pair), where a lender has demand of its own: its queue is not empty."""
    groups: list[list[int]] = []
    run: list[int] = []
    for i, action in enumerate(actions):
        if isinstance(action, ScaleWorkload) and "needs its cards" in action.reason:
            run.append(i)
            continue
        if run and isinstance(action, ScaleWorkload):
            busy = [
                j
                for j in run
                if (s := signals.workload(actions[j].target)) is not None
                and (s.queue_depth or 0) > 0
            ]
            if busy:
                groups.append([*run, i])
        run = []
    return groups
