"""The chat-ops commands: what `/steward …` and a mention answer, with the facts the CLI gives.

Every command goes through the functions the CLI uses — the cluster's observation, the dry run
of `steward plan` (agent.daemon.compose.dry_run), the decision log.s explanation (`steward audit
explain`), the approval inbox and its one answering path (agent.daemon.answers), the pause
switch, and the rotation request of `steward mode rotate` — so Slack can neither do more nor
say other than the terminal. `Commands` knows nothing of Slack's API: it turns a command line
and a Slack user id into a `Reply`; agent/chatops/app.py sends it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from agent.approvals.channel import Identity
from agent.approvals.inbox import Inbox, PendingDecision
from agent.audit import AuditError, AuditLog
from agent.audit.explanations import explain as explain_decision
from agent.audit.explanations import render
from agent.chatops.access import may_steer
from agent.chatops.status import node_lines, workload_lines
from agent.chatops.store import ChatopsStore
from agent.daemon.answers import history_for, submit
from agent.rotation.request import RequestResult
from agent.support import pause as switch
from policies.errors import PolicyError
from policies.model import Policy
from tools.errors import StewardError
from tools.model import ClusterState

USAGE = (
    "status · plan · why ID · pending · approve ID · deny ID REASON · pause [REASON] · "
    "resume · mode split|cluster · ask QUESTION"
)
STEERING = ("approve", "deny", "pause", "resume", "mode")


@dataclass(frozen=True)
class Reply:
    """One answer: a headline, its lines, and whether only the asker should see it."""

    title: str
    lines: list[str] = field(default_factory=list)
    thread: list[str] = field(default_factory=list)
    """Detail for the message's thread (beside lines past blocks.SHORT_LINES)."""
    ephemeral: bool = False
    answered: PendingDecision | None = None
    """The decision this reply answered (the app then updates its approval message)."""


class Rotations(Protocol):
    """Rotation requests, carried out by the daemon between two ticks (it is the one writer of
    the cluster and the log): `request` judges and maybe runs one; `answered` runs an approved
    one."""

    def request(self, target: str) -> RequestResult: ...

    def answered(self, decision_id: str, target: str) -> RequestResult: ...


@dataclass(eq=False)
class Commands:
    """Answers commands over one data dir."""

    data_dir: Path
    policy: Policy
    observe: Callable[[], ClusterState]
    store: ChatopsStore
    _: KW_ONLY
    dry_run: Callable[[], dict[str, object]]
    """`steward plan`'s document (agent.daemon.compose.dry_run), for `/steward plan`."""
    rotations: Rotations | None
    now: Callable[[], datetime] | None = None
    """The cluster's clock, where it runs in this process (the daemon's): when an answer
    was given. Else the time of the observation it was given on."""
    ask: Callable[[str, str], Reply] | None = None
    """Answers a question with the model's read-only tools (agent/chatops/questions.py)."""

    def handle(self, text: str, user: str, where: str) -> Reply:
        """Answer `text` (what follows `/steward` or the mention) from Slack user `user`;
        `where` names the message or channel, for the decision log."""
        words = text.split()
        verb = words[0].lower() if words else "help"
        args = words[1:]
        if (
            verb in STEERING
            and verb not in ("approve", "deny")
            and not may_steer(self.policy, user)
        ):
            return Reply(
                f"<@{user}> may not {verb}: only members of the policy's approver groups "
                f"({', '.join(sorted(self.policy.approvers.groups)) or 'none'}) may",
                ephemeral=True,
            )
        try:
            return self._dispatch(verb, args, user, where)
        except (StewardError, PolicyError, AuditError) as exc:
            return Reply(f"{verb}: {exc}", ephemeral=True)

    def _dispatch(self, verb: str, args: list[str], user: str, where: str) -> Reply:
        if verb == "status" and not args:
            return self.status()
        if verb == "plan" and not args:
            return self.plan()
        if verb == "why" and len(args) == 1:
            return self.why(args[0])
        if verb == "pending" and not args:
            return self.pending()
        if verb == "approve" and len(args) == 1:
            return self.answer(args[0], user, approved=True, note=f"Slack {where}")
        if verb == "deny" and len(args) >= 2:
            reason = " ".join(args[1:])
            return self.answer(args[0], user, approved=False, note=f"{reason} (Slack {where})")
        if verb == "pause":
            return self.pause(user, " ".join(args))
        if verb == "resume" and not args:
            return self.resume(user)
        if verb == "mode" and len(args) == 1:
            return self.mode(args[0], user)
        if self.ask is not None and args and verb not in STEERING:
            # `/steward ask …`, or a mention that is a question (`@steward why is …?`): what
            # no command above took.
            return self.ask(" ".join(args if verb == "ask" else [verb, *args]), user)
        return Reply(f"usage: /steward {USAGE}", ephemeral=verb != "help")

    # -- asking -----------------------------------------------------------------------------------

    def status(self) -> Reply:
        state = self.observe()
        held = switch.read(self.data_dir)
        waiting = self._waiting()
        lines = [f"waiting for approval: {len(waiting)}" + " (`/steward pending`)" * bool(waiting)]
        lines += workload_lines(state)
        title = f"status at {state.observed_at:%Y-%m-%d %H:%M:%S %Z}"
        return Reply(title + (f" — {held.line()}" if held else ""), lines, node_lines(state))

    def plan(self) -> Reply:
        result = self.dry_run()
        lines = [f"finding: {f}" for f in _strings(result.get("findings"))]
        actions = result.get("actions")
        if not isinstance(actions, list) or not actions:
            lines.append(f"no action: {result.get('rationale') or 'nothing to decide'}")
        else:
            for a in actions:
                assert isinstance(a, dict)
                rules = ", ".join(_strings(a.get("rule_ids"))) or "-"
                lines += [
                    f"[{a['verdict']}] {a['describe']} — rules: {rules}",
                    f"    why: {a['reason']}",
                    f"    policy: {a['message']}",
                    f"    expected: {a['expected_effect']}",
                ]
        return Reply(f"plan {result['decision_id']} at {result['observed_at']} (dry run)", lines)

    def why(self, decision_id: str) -> Reply:
        with AuditLog.open(self.data_dir, readonly=True) as log:
            records = log.decision(decision_id)
        try:
            explanation = explain_decision(records)
        except ValueError:
            return Reply(
                f"no decision {decision_id!r} with an intent or plan in the decision log; "
                "`steward audit show --kind intent` lists them",
                ephemeral=True,
            )
        lines = render(explanation).splitlines()
        return Reply(
            f"decision {decision_id}: {explanation.status}", [line for line in lines if line]
        )

    def pending(self) -> Reply:
        waiting = self._waiting()
        lines = [
            f"{p.decision_id} since {p.created_at:%H:%M:%S}: {a.describe()} — {m}"
            for p in waiting
            for a, m in zip(p.actions, p.messages, strict=True)
        ]
        return Reply("nothing waits for approval" if not waiting else "waiting for approval", lines)

    def _waiting(self) -> list[PendingDecision]:
        inbox = Inbox.open(self.data_dir)
        try:
            return inbox.listed("waiting")
        finally:
            inbox.close()

    # -- steering ---------------------------------------------------------------------------------

    def answer(self, decision_id: str, user: str, *, approved: bool, note: str) -> Reply:
        """Approve or deny as Slack user `user`; the same path as `steward approve`."""
        inbox = Inbox.open(self.data_dir)
        try:
            state = self.observe()
            submitted = submit(
                inbox,
                self.policy,
                state,
                history_for(self.data_dir, state),
                decision_id,
                approved=approved,
                identity=Identity(channel="slack", sender=user, principal=user),
                reason=note,
                at=self.now() if self.now is not None else None,
            )
            found = inbox.get(decision_id)
        finally:
            inbox.close()
        if submitted.status in ("not_allowed", "expired", "lost"):
            return Reply(f"refused: {submitted.message}; nothing changed", ephemeral=True)
        # Answered (a yes the policy may refuse at execution is still recorded, and the agent
        # judges it again on its own, live observation when it resumes the decision).
        verb = "approved" if approved else "denied"
        target = self.store.take_request(decision_id) if approved else None
        if target is not None and self.rotations is not None:
            result = self.rotations.answered(decision_id, target)
            return Reply(
                f"{decision_id} {verb} by <@{user}>; rotation to {target}: {result.status}",
                [result.message],
                answered=found,
            )
        after = "runs on the agent's next tick" if approved else "dropped on the next tick"
        return Reply(f"{decision_id} {verb} by <@{user}>; {after}", answered=found)

    def press(self, decision_id: str, user: str, *, approved: bool, note: str) -> Reply:
        """A button press: `answer`, with its refusals (answered already, expired, unknown)
        told to the presser only."""
        try:
            return self.answer(decision_id, user, approved=approved, note=note)
        except StewardError as exc:
            return Reply(f"{exc}; nothing changed", ephemeral=True)

    def pause(self, user: str, reason: str) -> Reply:
        wanted = switch.Pause(by=user, at=datetime.now(UTC), reason=reason, channel="slack")
        held, made = switch.pause(self.data_dir, wanted)
        return Reply(("" if made else "already ") + held.line() + "; `/steward resume` lifts it")

    def resume(self, user: str) -> Reply:
        lifted = switch.resume(self.data_dir)
        if lifted is None:
            return Reply("the agent was not paused", ephemeral=True)
        return Reply(f"resumed by <@{user}>; actions run again from the next tick")

    def mode(self, target: str, user: str) -> Reply:
        if self.rotations is None:
            return Reply("mode: rotations need the running agent", ephemeral=True)
        if held := switch.read(self.data_dir):
            return Reply(
                f"mode {target}: the agent is {held.line()}; resume it first", ephemeral=True
            )
        result = self.rotations.request(target)
        if result.status == "pending":
            self.store.requested(result.decision_id, target, user)
            groups = ", ".join(result.verdict.approvers) or "an approver group"
            waits = (
                f"{result.verdict.message}; a member of {groups} approves it with the button "
                f"(or `/steward approve {result.decision_id}`), and it runs then"
            )
            return Reply(f"rotation to {target} ({result.decision_id}): pending", [waits])
        return Reply(
            f"rotation to {target} ({result.decision_id}): {result.status}", [result.message]
        )


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
