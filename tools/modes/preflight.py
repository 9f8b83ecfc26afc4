"""Preflight: what must hold before a rotation touches anything.

A rotation that starts on a half-working link or a card that cannot hold the model turns minutes
of planned downtime into an outage. So before anything is drained, every condition the target
mode needs is checked on a fresh observation, and the transaction is refused if one fails:

- the target's nodes are present, ready and schedulable;
- for a mode whose replicas span nodes (tensor parallel), every path of the link between them
  negotiates at least a fraction of its nominal speed (the seeds: 11 % after a pending reboot,
  13–15 Gb/s of 200 after a hot-plug), and uses the RoCE GID index the serving configuration
  expects (it changes after a reboot and NCCL does not warn);
- every incoming model fits its nodes' memory at its configured context (placement's `fit`).

The thresholds come from the caller (the policy's values, passed in by the agent layer): the
tools layer knows no policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from tools.errors import InvalidInput
from tools.model import ClusterState, Link, Mode, Workload

ModeKind = Literal["split", "cluster"]


class FitVerdict(BaseModel):
    """Whether one model fits its nodes at a context length (placement's answer, reduced)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fits: bool
    max_context: int | None = None
    message: str = ""


FitFn = Callable[[str, int, ModeKind], FitVerdict]
"""(model, context, mode kind) -> verdict; the default asks tools.placement."""


class Check(BaseModel):
    """One preflight condition and what was found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    ok: bool
    message: str


class PreflightReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def as_detail(self) -> dict[str, JsonValue]:
        return {"checks": [c.model_dump(mode="json") for c in self.checks]}


class PreflightLimits(BaseModel):
    """The thresholds preflight applies (the policy's mode preconditions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    link_min_fraction: float = Field(default=0.4, gt=0, le=1)
    """Each link path must negotiate at least this fraction of its nominal speed. A healthy
    GX10 path negotiates ~98 of 200 Gb/s (49 %); the seeds' faults sit at 11 % and 7 %."""
    expected_gid_index: int | None = None
    """The GID index paths must use; None means the link's own `configured_gid_index`."""


def mode_kind(mode: Mode, state: ClusterState) -> ModeKind:
    """'cluster' when any of the mode's workloads spans several nodes, else 'split'."""
    spans = [w.nodes_per_replica for w in mode_workloads(mode, state)]
    return "cluster" if any(n > 1 for n in spans) else "split"


def mode_workloads(mode: Mode, state: ClusterState) -> list[Workload]:
    """The mode's workloads as observed (a name the cluster does not know is left out)."""
    return [w for name in mode.workloads if (w := state.workload(name)) is not None]


def mode_links(mode: Mode, state: ClusterState) -> list[Link]:
    """The links whose two ends are both nodes of the mode."""
    return [link for link in state.links if set(link.nodes) <= set(mode.nodes)]


def preflight(
    state: ClusterState, target: str, limits: PreflightLimits, fit: FitFn
) -> PreflightReport:
    """Check every condition the target mode needs on this observation; changes nothing."""
    mode = state.mode(target)
    if mode is None:
        known = ", ".join(m.name for m in state.modes) or "none"
        check = Check(
            name="mode", ok=False, message=f"mode {target!r} does not exist (known: {known})"
        )
        return PreflightReport(target=target, checks=(check,))
    if state.active_mode is not None and state.active_mode.name == target:
        check = Check(name="mode", ok=False, message=f"mode {target} is already active")
        return PreflightReport(target=target, checks=(check,))
    checks = [*_workload_checks(mode, state), *_node_checks(mode, state)]
    if mode_kind(mode, state) == "cluster":
        links = mode_links(mode, state)
        if not links:
            checks.append(
                Check(
                    name="link",
                    ok=False,
                    message=f"mode {target} spans nodes {', '.join(mode.nodes)} but no link "
                    "joins them in the observation",
                )
            )
        for link in links:
            checks.extend(_link_checks(link, limits))
    checks.extend(_fit_checks(mode, state, fit))
    return PreflightReport(target=target, checks=tuple(checks))


def _workload_checks(mode: Mode, state: ClusterState) -> list[Check]:
    missing = [name for name in mode.workloads if state.workload(name) is None]
    if not missing:
        return []
    return [
        Check(
            name="workloads",
            ok=False,
            message=f"mode {mode.name} names workload(s) the cluster does not have: "
            f"{', '.join(missing)}",
        )
    ]


def _node_checks(mode: Mode, state: ClusterState) -> list[Check]:
    checks: list[Check] = []
    for name in mode.nodes:
        node = state.node(name)
        if node is None:
            checks.append(Check(name=f"node:{name}", ok=False, message=f"node {name} is absent"))
        elif not node.ready:
            checks.append(Check(name=f"node:{name}", ok=False, message=f"node {name} is not ready"))
        elif not node.schedulable:
            checks.append(
                Check(
                    name=f"node:{name}",
                    ok=False,
                    message=f"node {name} is cordoned or tainted NoSchedule; uncordon it first",
                )
            )
        else:
            checks.append(Check(name=f"node:{name}", ok=True, message=f"node {name} is ready"))
    return checks


def _link_checks(link: Link, limits: PreflightLimits) -> list[Check]:
    checks: list[Check] = []
    expected_gid = (
        limits.expected_gid_index
        if limits.expected_gid_index is not None
        else link.configured_gid_index
    )
    for path in link.paths:
        where = f"{link.name}/{path.name}"
        fraction = path.fraction_of_nominal()
        if fraction is None:
            checks.append(
                Check(
                    name=f"link:{where}",
                    ok=False,
                    message=f"{where}: no fresh reading of the negotiated speed; "
                    "measure the link before rotating",
                )
            )
        else:
            speed = path.negotiated_gbps.value
            ok = fraction >= limits.link_min_fraction
            verdict = "at or above" if ok else "below"
            hint = "" if ok else "; reboot pending or hot-plugged? re-seat or reboot both nodes"
            checks.append(
                Check(
                    name=f"link:{where}",
                    ok=ok,
                    message=f"{where}: {speed:g} of {path.nominal_gbps:g} Gb/s "
                    f"({fraction:.0%}), {verdict} the {limits.link_min_fraction:.0%} floor{hint}",
                )
            )
        checks.append(_gid_check(where, path.gid_index.value, path.gid_index.usable, expected_gid))
    return checks


def _gid_check(where: str, gid: float | None, usable: bool, expected: int | None) -> Check:
    name = f"gid:{where}"
    if expected is None:
        return Check(
            name=name,
            ok=False,
            message=f"{where}: no expected RoCE GID index is configured; set the link's "
            "configured_gid_index (NCCL_IB_GID_INDEX) or the policy's expected GID",
        )
    if not usable or gid is None:
        return Check(
            name=name,
            ok=False,
            message=f"{where}: no fresh reading of the RoCE GID index (expected {expected})",
        )
    if int(gid) != expected:
        return Check(
            name=name,
            ok=False,
            message=f"{where}: RoCE GID index is {int(gid)}, the serving configuration expects "
            f"{expected} (it changes after a reboot and NCCL does not warn); update "
            "NCCL_IB_GID_INDEX or the expected GID",
        )
    return Check(name=name, ok=True, message=f"{where}: RoCE GID index {expected} as expected")


def _fit_checks(mode: Mode, state: ClusterState, fit: FitFn) -> list[Check]:
    kind = mode_kind(mode, state)
    checks: list[Check] = []
    for workload in mode_workloads(mode, state):
        name = f"fit:{workload.name}"
        if workload.model is None or workload.context_length is None:
            checks.append(
                Check(
                    name=name,
                    ok=False,
                    message=f"workload {workload.name} has no model or context length to check",
                )
            )
            continue
        verdict = fit(workload.model, workload.context_length, kind)
        largest = f" (largest that fits: {verdict.max_context:,})" if verdict.max_context else ""
        state_word = "fits" if verdict.fits else "does not fit"
        detail = f": {verdict.message}" if verdict.message else ""
        checks.append(
            Check(
                name=name,
                ok=verdict.fits,
                message=f"{workload.model} at {workload.context_length:,} tokens "
                f"{state_word} in {kind} mode{largest}{detail}",
            )
        )
    return checks


def placement_fit(model: str, context: int, kind: ModeKind) -> FitVerdict:
    """The memory fit placement computes (tools.placement), reduced to what preflight needs.

    A model the catalogue does not know cannot be judged: it does not pass.
    """
    from tools.placement.memoryfit import fit

    try:
        report = fit(model, context, kind)
    except InvalidInput as exc:
        return FitVerdict(fits=False, message=f"{exc}; add the model to the placement catalogue")
    return FitVerdict(
        fits=report.fits, max_context=report.largest_context, message="; ".join(report.reasons)
    )
