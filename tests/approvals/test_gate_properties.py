"""Properties of the gate at execution over generated plans, answers, clocks and policies.

Whatever was proposed, answered and changed since: no action is allowed at execution unless
the policy, judging exactly the actions that will run on the observation they run on, allows it
(or asks for the approval it was given, in time, by someone who may give it); nothing denied at
proposal ever runs; nothing runs inside a "nothing" window or on an observation older than the
decision's.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.loop.gate import at_execution
from lab.sim.backend import SimCluster
from policies.engine import judge
from policies.history import History
from policies.loader import load_policy
from policies.model import Policy, QuietWindow
from tests.loop.conftest import APPROVE_BURST
from tools.actions import (
    Action,
    CordonNode,
    NoOp,
    PlaceReplica,
    Plan,
    ScaleWorkload,
    UncordonNode,
)
from tools.approval import Approval
from tools.model import ClusterState

BASE = SimCluster.homelab(seed=0).observe()
POLICY = load_policy(APPROVE_BURST)
ACTIONS: list[Action] = [
    ScaleWorkload(workload="burst-llm", replicas=1),
    ScaleWorkload(workload="render", replicas=1),
    ScaleWorkload(workload="worker", replicas=0),
    ScaleWorkload(workload="tts", replicas=0),
    PlaceReplica(workload="burst-llm", node="render-1"),
    PlaceReplica(workload="render", node="render-1"),
    CordonNode(node="ws-1"),
    UncordonNode(node="ws-1"),
    NoOp(reason="nothing to do"),
]
WINDOWS = {
    "none": (),
    "freeze": (QuietWindow(name="freeze", start="00:00", end="00:00", allow="nothing"),),
    "up_only": (QuietWindow(name="calm", start="00:00", end="00:00", allow="scale_up_only"),),
}


def _policy(windows: str, ttl_min: int) -> Policy:
    return POLICY.model_copy(
        update={
            "windows": WINDOWS[windows],
            "approval": POLICY.approval.model_copy(
                update={"expires_after": timedelta(minutes=ttl_min)}
            ),
        }
    )


def _at(state: ClusterState, seconds: int) -> ClusterState:
    return state.model_copy(update={"observed_at": state.observed_at + timedelta(seconds=seconds)})


answers = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(["approved", "denied", "expired"]),
        st.sampled_from(["homelab-owner", "nobody"]),
        st.integers(-60, 3600),
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.sampled_from(range(len(ACTIONS))), min_size=1, max_size=4),
    proposed_windows=st.sampled_from(list(WINDOWS)),
    executed_windows=st.sampled_from(list(WINDOWS)),
    ttl_min=st.sampled_from([1, 30]),
    answer=answers,
    later_s=st.integers(-120, 7200),
)
def test_nothing_runs_without_an_allow_judged_at_execution(  # noqa: PLR0917 - hypothesis
    picks: list[int],
    proposed_windows: str,
    executed_windows: str,
    ttl_min: int,
    answer: tuple[str, str, int] | None,
    later_s: int,
) -> None:
    plan = Plan(actions=tuple(ACTIONS[i] for i in picks))
    decided = BASE
    verdicts = judge(plan, decided, _policy(proposed_windows, ttl_min), History()).verdicts
    approval = None
    if answer is not None:
        word, by, after_s = answer
        approval = Approval(
            answer=word,
            principal=by if word != "expired" else "",
            at=decided.observed_at + timedelta(seconds=after_s),
        )
    now = _at(decided, later_s)
    policy = _policy(executed_windows, ttl_min)
    gate = at_execution(
        verdicts,
        approval,
        decided_at=decided.observed_at,
        state=now,
        policy=policy,
        history=History(),
    )
    assert [g.index for g in gate] == list(range(len(verdicts)))
    allowed = [g.index for g in gate if g.verdict == "allow"]
    for i in allowed:
        assert verdicts[i].decision != "deny", "denied at proposal, allowed at execution"
        if verdicts[i].decision == "needs_approval":
            assert approval is not None and approval.answer == "approved"
            assert approval.at <= decided.observed_at + policy.approval.expires_after
            assert now.observed_at <= approval.at + policy.approval.expires_after
            assert policy.may_approve(approval.principal, verdicts[i].action, now)
    if later_s < 0:
        assert not allowed, "ran on an observation older than the decision's"
    if executed_windows == "freeze":
        assert all(isinstance(verdicts[i].action, NoOp) for i in allowed)
    running = Plan(actions=tuple(verdicts[i].action for i in allowed))
    rejudged = judge(running, now, policy, History(), now=now.observed_at).verdicts
    for i, v in zip(allowed, rejudged, strict=True):
        assert v.decision != "deny", f"{v.action.describe()} runs but is denied: {v.message}"
        if v.decision == "needs_approval":
            assert verdicts[i].decision == "needs_approval"
