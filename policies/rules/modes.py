"""Preconditions of a mode rotation: a new mode, a long enough stay in the current one, and —
for a mode whose replicas span several nodes — a healthy link between them.

The seeds' faults are what this catches: a link at 11 % of nominal after a pending reboot, 13–15
Gb/s per path after a hot-plug, a RoCE GID index that changed after a reboot (NCCL does not
warn). A path without a fresh reading fails: a missing measurement is never taken as healthy.

Rule ids: mode.already_active, mode.min_dwell, mode.link_fraction, mode.gid_index.
"""

from __future__ import annotations

from policies.durations import aware, format_duration
from policies.rules.context import Context
from policies.rules.ledger import Denial
from tools.actions import Action, RotateMode
from tools.model import ClusterState, Mode

ALREADY_ACTIVE = "mode.already_active"
MIN_DWELL = "mode.min_dwell"
LINK_FRACTION = "mode.link_fraction"
GID_INDEX = "mode.gid_index"


def check(action: Action, ctx: Context) -> list[Denial]:
    if type(action) is not RotateMode:
        return []
    state, rules = ctx.state, ctx.policy.rotation
    mode = state.mode(action.target_mode)
    assert mode is not None
    denials = []
    active = state.active_mode
    if active is not None and active.name == mode.name:
        denials.append(Denial(ALREADY_ACTIVE, f"mode {mode.name} is already active"))
    elif active is not None and ctx.now - aware(active.since) < rules.min_dwell:
        since = aware(active.since)
        again = ctx.policy.local(since + rules.min_dwell)
        denials.append(
            Denial(
                MIN_DWELL,
                f"mode {active.name} has been active since "
                f"{ctx.policy.local(since):%H:%M %Z}; it must stay "
                f"{format_duration(rules.min_dwell)}, so rotation is allowed from {again:%H:%M %Z}",
            )
        )
    if spans_nodes(mode, state):
        denials += _links(mode, ctx)
    return denials


def spans_nodes(mode: Mode, state: ClusterState) -> bool:
    """Whether a replica of the mode runs across several nodes (and so needs the link)."""
    return any(
        w is not None and w.nodes_per_replica > 1 for w in map(state.workload, mode.workloads)
    )


def _links(mode: Mode, ctx: Context) -> list[Denial]:
    rules = ctx.policy.rotation
    group = set(mode.nodes)
    links = [link for link in ctx.state.links if set(link.nodes) <= group]
    if not links:
        return [
            Denial(
                LINK_FRACTION,
                f"mode {mode.name} spans nodes but no link between "
                f"{', '.join(sorted(group))} is known",
            )
        ]
    denials = []
    for link in links:
        expected = rules.expected_gid_index
        if expected is None:
            expected = link.configured_gid_index
        for path in link.paths:
            where = f"path {path.name} of {link.name}"
            fraction = path.fraction_of_nominal()
            if fraction is None:
                denials.append(Denial(LINK_FRACTION, f"{where} has no fresh speed reading"))
            elif fraction < rules.min_link_fraction:
                speed = path.negotiated_gbps.value or 0.0
                denials.append(
                    Denial(
                        LINK_FRACTION,
                        f"{where} negotiates {speed:g} Gb/s, {fraction:.0%} of its "
                        f"{path.nominal_gbps:g} Gb/s nominal; rotating to {mode.name} needs "
                        f">= {rules.min_link_fraction:.0%} (a pending reboot or a hot-plug?)",
                    )
                )
            if expected is None:
                continue
            gid = path.gid_index
            if not gid.usable or gid.value is None:
                denials.append(Denial(GID_INDEX, f"{where} has no fresh GID index reading"))
            elif int(gid.value) != expected:
                denials.append(
                    Denial(
                        GID_INDEX,
                        f"{where} uses RoCE GID index {int(gid.value)}, not the expected "
                        f"{expected} (it changes after a reboot and NCCL does not warn)",
                    )
                )
    return denials
