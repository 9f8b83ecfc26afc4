"""The commands that answer the agent: `pending`, `approve` and `deny`.

An answer goes through the CLI's channel (agent/approvals/channel.py): the OS user, or `--as` an
approver of the policy. It is judged when given (agent/daemon/answers.py) and the running
agent carries an approval out on its next tick, judging it again first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.approvals.channel import CliChannel
from agent.approvals.inbox import Inbox
from agent.approvals.rebuild import why_unresumable
from agent.audit import AuditError, AuditLog
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    DataDirOpt,
    JsonOpt,
    PolicyOpt,
    config,
    console,
    data_dir,
    decision_id_arg,
    emit_json,
    fail,
    names_a_cluster,
)
from agent.daemon.answers import history_for, submit
from agent.daemon.catchup import catch_up
from agent.daemon.compose import open_backend, open_policy, run_policy_path
from policies.errors import PolicyError
from tools.errors import InvalidInput
from tools.model import ClusterState

DecisionArg = Annotated[
    str, typer.Argument(help="The decision id `steward pending` shows.", callback=decision_id_arg)
]
AsOpt = Annotated[
    str | None,
    typer.Option(
        "--as", help="Answer as this approver of the policy (default: your OS user name)."
    ),
]


def register(app: typer.Typer) -> None:
    """Add pending, approve and deny to the root app."""
    app.command("pending")(pending)
    app.command("approve")(approve)
    app.command("deny")(deny)


def pending(json_out: JsonOpt = False, data_dir_opt: DataDirOpt = None) -> None:
    """Decisions that wait for a human, with the actions and the rules that hold them."""
    inbox = Inbox.open(data_dir(data_dir_opt))
    try:
        waiting = inbox.listed("waiting")
    finally:
        inbox.close()
    if json_out:
        emit_json([p.model_dump(mode="json") for p in waiting])
        return
    if not waiting:
        console.print("nothing waits for approval")
    for p in waiting:
        console.print(f"[bold]{p.decision_id}[/bold] since {p.created_at.isoformat()}")
        for action, message in zip(p.actions, p.messages, strict=True):
            console.print(f"  {action.describe()} — {message}", markup=False, highlight=False)


@names_a_cluster
def approve(
    decision_id: DecisionArg,
    as_name: AsOpt = None,
    data_dir_opt: DataDirOpt = None,
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Approve a waiting decision; the running agent carries it out on its next tick."""
    _answer(decision_id, True, as_name, "", data_dir_opt, policy, json_out)


@names_a_cluster
def deny(  # noqa: PLR0917 - typer maps each option to a parameter
    decision_id: DecisionArg,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the decision log).")],
    as_name: AsOpt = None,
    data_dir_opt: DataDirOpt = None,
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Deny a waiting decision; its actions are dropped and the log says who and why."""
    _answer(decision_id, False, as_name, reason, data_dir_opt, policy, json_out)


def _answer(  # noqa: PLR0917 - the two commands' options, passed on
    decision_id: str,
    approved: bool,
    by: str | None,
    reason: str,
    where: Path | None,
    policy: Path | None,
    json_out: bool = False,
) -> None:
    """Answer through the CLI's channel: the OS user, or `--as` a member of the allow-list.
    With --json the result is one document on stdout — decision_id, status (answered,
    expired, lost, not_allowed …), answer, by, message, rule_ids — whether it was taken or not
    (exit 1 when not)."""
    root = data_dir(where)
    try:
        the_policy, _ = open_policy(policy or run_policy_path(root))
        identity = CliChannel().identify(by, the_policy)
    except (PolicyError, InvalidInput) as exc:
        fail(str(exc))
    inbox = Inbox.open(root)
    try:
        state = _observe_as_of_log(root)
        found = inbox.get(decision_id)
        if found is not None and found.status == "waiting":
            lost = _unresumable(root, decision_id)
            if lost is not None:
                inbox.refuse(decision_id, "lost", lost)
        submitted = submit(
            inbox,
            the_policy,
            state,
            history_for(root, state),
            decision_id,
            approved=approved,
            identity=identity,
            reason=reason,
        )
    except InvalidInput as exc:
        fail(str(exc))
    finally:
        inbox.close()
    if json_out:
        emit_json(
            {
                **submitted.model_dump(mode="json"),
                "answer": "approved" if approved else "denied",
                "by": identity.principal,
                "reason": reason,
            }
        )
        if not submitted.ok:
            raise typer.Exit(EXIT_CHECK_FAILED)
        return
    if not submitted.ok:
        fail(submitted.message, EXIT_CHECK_FAILED)
    console.print(submitted.message, markup=False, highlight=False, soft_wrap=True)


def _unresumable(root: Path, decision_id: str) -> str | None:
    """Why the agent could never resume this decision (its checkpoint gone …), if so."""
    try:
        audit = AuditLog.open(root, readonly=True)
    except AuditError:
        return None  # no log yet: nothing to say either way; the agent squares it at start
    try:
        return why_unresumable(root, audit, decision_id)
    finally:
        audit.close()


def _observe_as_of_log(root: Path) -> ClusterState:
    """The cluster the answer is judged on. A simulated one is brought, in memory, up to the
    decision log's last time first: the daemon saves it between ticks (at most every second)
    and after its actions, not when a decision starts to wait, so the saved world can be a tick
    older than the decision being answered, and the gate would take it for a world that went
    back."""
    parts = open_backend(config(), root).parts
    try:
        audit = AuditLog.open(root, readonly=True)
    except AuditError:
        audit = None  # no log yet: nothing to be older than
    if audit is not None:
        try:
            catch_up(parts, audit.last_time())
        finally:
            audit.close()
    return parts.cluster().observe()
