"""What a denial or a wait holds back from the next plans, and for how long.

The guard's denials are remembered (`Memory.denied`) by what they change and in which direction,
so that the log is not a ticker: a denied scale-up is not proposed again, nor its placements,
until the rule that denied it would allow it or `DENIED_HOLD_S` has passed. The plan node also
drops what already waits for a human and what a long action in progress holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agent.loop.context import LoopContext
from agent.loop.state import Decision
from agent.signals.memory import Memory
from tools import effects
from tools.actions import Action, Plan, RotateMode
from tools.model import ClusterState

DENIED_HOLD_S = 600.0
"""An action the guard denied is not proposed again for this long (the log is not a ticker),
or until the rule that denied it allows it again, if that is sooner (a cooldown's end, the
hourly budget's next slot)."""


def hold_until(now: datetime, retry_at: datetime | None) -> datetime:
    """Until when a denied action is held back."""
    longest = now + timedelta(seconds=DENIED_HOLD_S)
    return longest if retry_at is None else max(now, min(longest, retry_at))


def proposal_key(action: Action) -> str:
    """A proposal's identity without its reason: two proposals of one change share it (the
    thing an action changes is tools.effects.action_key)."""
    return action.model_dump_json(exclude={"reason"})


def hold_key(action: Action, state: ClusterState) -> str:
    """What a denial holds back: the thing changed and the direction of the change, so that a
    denied scale-up of a workload holds back its placements and larger scale-ups too (sized
    proposals differ tick to tick as the queue grows; the log is still not a ticker)."""
    thing = effects.action_key(action)
    if not thing:
        return proposal_key(action)
    return f"{thing}|{effects.direction(action, state)}"


def denied_recently(memory: Memory, now: datetime) -> dict[str, datetime]:
    """Denied actions still held back at `now`, with the time their hold ends."""
    return {k: until for k, until in memory.denied.items() if until > now}


def hold_back(proposed: Plan, d: Decision, ctx: LoopContext, now: datetime) -> Plan:
    """Drop what already waits for a human, what a long action in progress holds (a drain, a
    rotation), and (in the daemon) what was denied lately."""
    waiting = ctx.inbox.open_keys()
    held = denied_recently(ctx.memory, now) if ctx.hold_denied else {}
    state = ctx.snapshot(d.decision_id)
    kept: list[Action] = []
    notes: list[str] = []
    for action in proposed.actions:
        if (action.type, action.target) in waiting:
            notes.append(f"{action.describe()}: already waits for approval")
        elif ctx.held and (action.target in ctx.held or isinstance(action, RotateMode)):
            notes.append(f"{action.describe()}: a long action in progress holds it")
        elif (until := held.get(hold_key(action, state))) is not None:
            notes.append(f"{action.describe()}: denied, held until {until:%H:%M:%S}")
        else:
            kept.append(action)
    if not notes:
        return proposed
    rationale = "; ".join(filter(None, (proposed.rationale, "held back: " + "; ".join(notes))))
    return proposed.model_copy(update={"actions": tuple(kept), "rationale": rationale[:8000]})
