"""The default policy never cordons or drains the last schedulable node of a pool or a mode, and
a node that serves a protected workload is cordoned only with approval.

Before: the default policy let a planner cordon every node, both GX10 included, without approval.
"""

from __future__ import annotations

from policies.model import ApprovalRule
from tests.policies.builders import NODES_UNGATED, homelab, run, without_approvals
from tools.actions import CordonNode, DrainNode, UncordonNode
from tools.model import ClusterState

UNGATED = without_approvals(*NODES_UNGATED)
"""These tests judge the node rules themselves: no cordon waits for a person here unless the
test says so."""


def _cordoned(state: ClusterState, name: str) -> ClusterState:
    nodes = tuple(n.model_copy(update={"cordoned": True}) if n.name == name else n
                  for n in state.nodes)  # fmt: skip
    return state.model_copy(update={"nodes": nodes})


def test_cordoning_every_node_stops_at_the_last_of_each_pool_and_mode() -> None:
    nodes = ("gx10-a", "gx10-b", "ws-1", "render-1")
    verdicts = run(*(CordonNode(node=n) for n in nodes), policy=UNGATED).verdicts

    by_node = {v.action.target: v for v in verdicts}
    assert by_node["gx10-a"].decision == "allow"
    assert by_node["gx10-b"].decision == "deny"
    assert {"nodes.last_of_pool", "nodes.last_of_mode"} <= set(by_node["gx10-b"].rule_ids)
    assert "gx10-b is the last schedulable node of pool gx10" in by_node["gx10-b"].message
    assert by_node["ws-1"].decision == "deny"
    assert "nodes.last_of_pool" in by_node["ws-1"].rule_ids
    assert by_node["render-1"].decision == "allow"  # render and burst keep no minimum


def test_the_last_gx10_may_not_be_drained_once_the_other_is_cordoned() -> None:
    state = _cordoned(homelab(), "gx10-a")

    verdict = run(DrainNode(node="gx10-b"), state=state, policy=UNGATED).verdicts[0]

    assert verdict.decision == "deny" and "nodes.last_of_pool" in verdict.rule_ids


def test_uncordoning_one_first_lets_the_other_be_cordoned() -> None:
    state = _cordoned(homelab(), "gx10-a")

    actions = (UncordonNode(node="gx10-a"), CordonNode(node="gx10-b"))
    verdicts = run(*actions, state=state, policy=UNGATED).verdicts

    assert [v.decision for v in verdicts] == ["allow", "allow"]


def test_a_cordon_waiting_for_approval_counts_against_a_later_cordon() -> None:
    """Approving the first must not leave the pool without a node: the second is judged as if
    the first were approved."""
    policy = UNGATED
    ask = ApprovalRule(name="cordon_gx10_a", actions=("cordon_node",), pools=("gx10",),
                       approvers=("owners",))  # fmt: skip
    policy = policy.model_copy(update={"approvals": (*policy.approvals, ask)})
    first_asks = policy.model_copy(
        update={"approvals": tuple(a for a in policy.approvals if a.name != "cordon_gx10_a")}
    )
    assert run(CordonNode(node="gx10-b"), policy=first_asks).verdicts[0].decision == "allow"

    verdicts = run(CordonNode(node="gx10-a"), CordonNode(node="gx10-b"), policy=policy).verdicts

    assert verdicts[0].decision == "needs_approval"
    assert verdicts[1].decision == "deny" and "nodes.last_of_pool" in verdicts[1].rule_ids


def test_cordoning_a_node_that_serves_a_protected_workload_needs_approval() -> None:
    policy = UNGATED
    # Without the workstation's own minimum, the node is not the pool's last: approval decides.
    loose = policy.pools["workstation"].model_copy(update={"min_cards": 0, "min_ready_replicas": 0})
    pools = {**policy.pools, "workstation": loose}
    judged = run(CordonNode(node="ws-1"), policy=policy.model_copy(update={"pools": pools}))
    verdict = judged.verdicts[0]

    assert verdict.decision == "needs_approval"
    assert verdict.rule_ids == ("approval.cordon_protected_node",)
    assert verdict.approvers == ("owners",)


def test_cordoning_a_node_without_a_protected_workload_needs_no_owner_of_tts() -> None:
    verdict = run(CordonNode(node="render-1")).verdicts[0]
    assert verdict.decision == "needs_approval"
    assert verdict.rule_ids == ("approval.cordon_any_node",)  # the default: every cordon asks
    assert run(CordonNode(node="render-1"), policy=UNGATED).verdicts[0].decision == "allow"
