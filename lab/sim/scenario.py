"""Scenario files: which cluster, which seed, which demand, which faults (docs/scenarios.md).

An eval case is a scenario with more (docs/evals.md): workloads, node labels and serving
figures added to the profile (lab.sim.extras), a policy to judge with, actions done before
the start, and what the agent is expected to do (lab.sim.expect).

A scenario is YAML validated by pydantic. A file with an unknown key, a wrong type, an
impossible value or a name that is not in the profile is refused before anything runs, with one
`FILE:LINE:COL: field: message` line per problem (line numbers from ruamel.yaml).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from lab.sim.demand import (
    DemandSpec,
    DiurnalArrivals,
    DiurnalDemand,
    PoissonDemand,
    RatesDemand,
    RenderDemand,
    TraceDemand,
    load_rates,
)
from lab.sim.expect import ActionMatch, ApprovalMatch, Expect, Forbidden, PastAction
from lab.sim.extras import ExtraWorkload, NodeChange, Serving, apply, zoned
from lab.sim.faults import (
    Fault,
    GidChanged,
    LinkDegraded,
    MetricsOutage,
    MpsDoubleCount,
    NodeLoss,
    ProbeFailing,
)
from lab.sim.limits import EARLIEST_START, LATEST_START, MAX_REPLICAS, MAX_SPAN_S
from lab.sim.profiles import Profile, fleet, homelab
from tools.errors import InvalidInput
from tools.yamlbounds import check, read_text
from tools.yamldoc import YamlProblem

Loc = tuple[str | int, ...]


class HomelabProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["homelab"] = "homelab"


class FleetProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["fleet"] = "fleet"
    nodes: int = Field(ge=1, le=20_000)
    gpus_per_node: int = Field(default=8, ge=1, le=16)
    node_scrape_interval_s: float | None = Field(default=None, ge=1, le=300)
    """How often each node's readings are scraped (staggered; default: every 30 s, as the
    workloads'); at most Prometheus' five-minute lookback, after which a reading is missing."""
    zones: int = Field(default=0, ge=0, le=26)
    """Nodes labelled round-robin with this many zones (0: no zone labels)."""
    racks_per_zone: int = Field(default=0, ge=0, le=64)


ProfileChoice = Annotated[HomelabProfile | FleetProfile, Field(discriminator="kind")]


class Scenario(BaseModel):
    """One simulated situation: a profile, a seed, demand and faults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "homelab"
    description: str = ""
    profile: ProfileChoice = HomelabProfile()
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    speed: float = Field(
        default=0.0, ge=0, le=1e6, description="0: as fast as possible; 1: real time."
    )
    start: datetime = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
    duration_s: float = Field(
        default=3600.0, gt=0, le=MAX_SPAN_S, description="How long an eval runs it."
    )
    mode: Literal["split", "cluster"] | None = Field(
        default=None,
        description="The GX10 pair's mode at the start (homelab); None: the profile's default.",
    )
    replicas: dict[str, Annotated[int, Field(ge=0, le=MAX_REPLICAS)]] = Field(
        default={}, description="Initial replicas, by workload."
    )
    up_since_s: float = Field(
        default=0.0,
        ge=0,
        le=604_800,
        description="How long the initial replicas (and so the "
        "serving mode) have been up when the scenario starts.",
    )
    demand: tuple[DemandSpec, ...] = ()
    faults: tuple[Fault, ...] = ()
    workloads: tuple[ExtraWorkload, ...] = ()
    """Workloads added to the profile (any name, labels, annotations, model; CPU-only too)."""
    nodes: dict[str, NodeChange] = {}
    """Labels added to the profile's nodes (zone, rack, …)."""
    serving: dict[str, Serving] = {}
    """Serving figures of existing workloads changed (speed, context, load time)."""
    # -- what an eval case adds (docs/evals.md) --
    category: str = ""
    difficulty: Literal["easy", "medium", "hard", ""] = ""
    tags: tuple[str, ...] = ()
    tick_s: float = Field(default=15.0, gt=0, le=600, description="The agent's decision interval.")
    policy_base: str = "default"
    """The policy the case's changes go over: `default` (policies/default.yaml), `fleet`
    (policies/examples/fleet.yaml), or a file relative to the scenario."""
    policy: dict[str, Any] = {}
    """Changes laid over the base policy (a mapping merged key by key)."""
    history: tuple[PastAction, ...] = ()
    expect: Expect | None = None

    @field_validator("profile", mode="before")
    @classmethod
    def _profile_shorthand(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("start")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        # A plain datetime, not the YAML parser's subclass: it travels into checkpoints.
        plain = datetime(*value.timetuple()[:6], value.microsecond, tzinfo=value.tzinfo or UTC)
        if not EARLIEST_START <= plain <= LATEST_START:
            raise ValueError(
                f"a start between {EARLIEST_START:%Y-%m-%d} and {LATEST_START:%Y-%m-%d} is "
                "expected (times past it overflow the simulated clock)"
            )
        return plain

    def build_profile(self) -> Profile:
        if isinstance(self.profile, FleetProfile):
            fleet_spec = self.profile
            base = fleet(
                fleet_spec.nodes,
                fleet_spec.gpus_per_node,
                self.seed,
                fleet_spec.node_scrape_interval_s,
            )
            base = zoned(base, fleet_spec.zones, fleet_spec.racks_per_zone)
        else:
            base = homelab()
        return apply(base, self.workloads, self.nodes, self.serving)

    def problems(self) -> Iterator[tuple[Loc, str]]:
        """Values that are well-typed but impossible for this profile (names it lacks, …)."""
        prof = self.build_profile()
        workloads = {w.name for w in prof.workloads}
        pools = {p.name for p in prof.pools}
        nodes = {n.name for n in prof.nodes}
        paths = {lk.name: {p.name for p in lk.paths} for lk in prof.links}
        if self.mode is not None and isinstance(self.profile, FleetProfile):
            yield ("mode",), "a fleet profile has no modes: leave `mode` out"
        for name, count in self.replicas.items():
            if name not in workloads:
                yield ("replicas", name), f"no workload named {name!r} in {prof.name}"
            elif count < 0:
                yield ("replicas", name), f"replicas must be >= 0, got {count}"
        renders = {w.name for w in prof.workloads if w.runs_jobs}
        renders |= {p.name for p in prof.pools if p.workloads and set(p.workloads) <= renders}
        for i, d in enumerate(self.demand):
            if d.target not in workloads | pools:
                yield ("demand", i, "target"), f"{d.target!r} is neither a workload nor a pool"
            elif isinstance(d, RenderDemand) != (d.target in renders):
                yield (
                    ("demand", i, "target"),
                    (
                        f"{d.target!r} is not a render workload: send it requests, not render jobs"
                        if isinstance(d, RenderDemand)
                        else f"{d.target!r} runs render jobs: use `kind: render` with gpu_s_per_job"
                    ),
                )
            shape = d.arrivals if isinstance(d, RenderDemand) else d
            if (
                isinstance(shape, DiurnalDemand | DiurnalArrivals)
                and shape.min_rate_per_min > shape.max_rate_per_min
            ):
                where = (
                    ("arrivals", "min_rate_per_min") if shape is not d else ("min_rate_per_min",)
                )
                yield (
                    ("demand", i, *where),
                    f"min_rate_per_min ({shape.min_rate_per_min:g}) is above max_rate_per_min "
                    f"({shape.max_rate_per_min:g})",
                )
            if isinstance(d, TraceDemand | RatesDemand) and not d.path.is_file():
                yield ("demand", i, "path"), f"no file at {d.path}"
            elif isinstance(d, RatesDemand):
                try:
                    load_rates(d.path, d.column)
                except InvalidInput as exc:
                    yield ("demand", i, "column"), str(exc)
        yield from self._named(prof, workloads, nodes)
        for i, f in enumerate(self.faults):
            if isinstance(f, MetricsOutage):
                for j, name in enumerate(f.nodes):
                    if name not in nodes:
                        yield ("faults", i, "nodes", j), f"no node named {name!r}"
                for j, name in enumerate(f.workloads):
                    if name not in workloads:
                        yield ("faults", i, "workloads", j), f"no workload named {name!r}"
            if isinstance(f, NodeLoss | MpsDoubleCount) and f.node not in nodes:
                yield ("faults", i, "node"), f"no node named {f.node!r}"
            if isinstance(f, ProbeFailing) and f.workload not in workloads:
                yield ("faults", i, "workload"), f"no workload named {f.workload!r}"
            if isinstance(f, LinkDegraded | GidChanged):
                if f.link not in paths:
                    yield ("faults", i, "link"), f"no link named {f.link!r}"
                elif f.path is not None and f.path not in paths[f.link]:
                    known = ", ".join(sorted(paths[f.link]))
                    yield ("faults", i, "path"), f"{f.link} has no path {f.path!r} ({known})"

    def _named(
        self, prof: Profile, workloads: set[str], nodes: set[str]
    ) -> Iterator[tuple[Loc, str]]:
        """Names in the case's additions, history and expectations that the profile lacks."""
        names = [w.name for w in prof.workloads]
        for i, extra in enumerate(self.workloads):
            if names.count(extra.name) > 1:
                yield ("workloads", i, "name"), f"{extra.name!r} is already in {prof.name}"
        for name in self.nodes:
            if name not in nodes:
                yield ("nodes", name), f"no node named {name!r}"
        for name in self.serving:
            if name not in workloads:
                yield ("serving", name), f"no workload named {name!r}"
        modes = {m.name for m in prof.modes}
        known = {"scale_workload": workloads, "place_replica": workloads,
                 "rotate_mode": modes}  # fmt: skip
        for i, past in enumerate(self.history):
            if past.target not in known.get(past.type, nodes):
                yield ("history", i, "target"), f"no {past.type} target named {past.target!r}"
        if self.expect is None:
            return
        groups: tuple[tuple[str, tuple[ActionMatch | Forbidden | ApprovalMatch, ...]], ...] = (
            ("actions", self.expect.actions),
            ("never", self.expect.never),
            ("approvals", self.expect.approvals),
        )
        for key, entries in groups:
            for i, entry in enumerate(entries):
                if entry.target is not None and entry.target not in known.get(entry.type, nodes):
                    yield (
                        ("expect", key, i, "target"),
                        f"no {entry.type} target named {entry.target!r}",
                    )
        for name in (*self.expect.end.workloads, *self.expect.queue_wait):
            if name not in workloads:
                yield ("expect", "end"), f"no workload named {name!r}"
        for name in (*self.expect.end.cordoned, *self.expect.end.schedulable):
            if name not in nodes:
                yield ("expect", "end"), f"no node named {name!r}"


def load_scenario(path: Path) -> Scenario:
    """Read and check a scenario file; raises InvalidInput listing every problem."""
    try:
        text = read_text(path, str(path), "the scenario")
        check(text, str(path))
    except YamlProblem as exc:
        raise InvalidInput(str(exc)) from exc
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the scenario: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        utf16 = isinstance(exc.object, bytes) and exc.object[:2] in (b"\xff\xfe", b"\xfe\xff")
        why = "it looks like UTF-16" if utf16 else f"byte {exc.object[exc.start]:#04x}"
        raise InvalidInput(f"{path}:1:1: not UTF-8 text ({why}); save it as UTF-8") from exc
    try:
        doc = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise InvalidInput(f"{where}: not valid YAML: {exc.problem}") from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}:1:1: a scenario is a mapping of keys (name, profile, …)")
    data = _plain(doc)
    _resolve_traces(data, path.parent)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        lines = [_line(path, doc, tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        raise InvalidInput("\n".join(lines)) from None
    found = [*scenario.problems(), *_trace_problems(scenario)]
    problems = [_line(path, doc, loc, msg) for loc, msg in found]
    if problems:
        raise InvalidInput("\n".join(problems))
    return scenario


TRACE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def _trace_problems(scenario: Scenario) -> list[tuple[Loc, str]]:
    """Trace and rates files are checked when the scenario is read, not when the day reaches
    them: a path to anything but a trace (`/etc/passwd`) is refused before anything runs."""
    found: list[tuple[Loc, str]] = []
    for i, d in enumerate(scenario.demand):
        path = getattr(d, "path", None)
        if path is None or d.kind not in ("trace", "rates"):
            continue
        want = TRACE_COLUMNS if d.kind == "trace" else ("window_start_s", getattr(d, "column", ""))
        try:
            with Path(path).open(newline="", encoding="utf-8") as fh:
                header = next(csv.reader(fh), [])
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or "not UTF-8 text"
            found.append((("demand", i, "path"), f"{path}: cannot read it as a CSV: {why}"))
            continue
        missing = [c for c in want if c not in [h.strip() for h in header]]
        if missing:
            found.append(
                (
                    ("demand", i, "path"),
                    f"{path} is not a {d.kind} file: no column {', '.join(missing)} in its "
                    f"header (a {d.kind} CSV starts with {','.join(c for c in want if c)})",
                )
            )
    return found


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _resolve_traces(data: dict[str, Any], base: Path) -> None:
    """Trace and rates paths are relative to the scenario file."""
    for d in data.get("demand") or ():
        if (
            isinstance(d, dict)
            and d.get("kind") in ("trace", "rates")
            and isinstance(d.get("path"), str)
        ):
            p = Path(d["path"]).expanduser()
            d["path"] = str(p if p.is_absolute() else (base / p).resolve())


def _line(path: Path, doc: Any, loc: Loc, msg: str) -> str:
    """`FILE:LINE:COL: field: message`, the position of the deepest part of `loc` in the file."""
    node = doc
    line, col = 0, 0
    field: list[str] = []
    for part in loc:
        if isinstance(part, int) and isinstance(node, CommentedSeq) and part < len(node):
            line, col = node.lc.item(part)
            node = node[part]
            field.append(f"[{part}]")
        elif isinstance(part, str) and isinstance(node, CommentedMap) and part in node:
            line, col = node.lc.key(part)
            node = node[part]
            field.append(("." if field else "") + part)
        # Otherwise a union tag pydantic put in the location: not a key in the file.
    name = "".join(field) or "(top level)"
    return f"{path}:{line + 1}:{col + 1}: {name}: {msg.removeprefix('Value error, ')}"


def fleet_scenario(nodes: int, gpus_per_node: int, seed: int = 0, load: float = 0.5) -> Scenario:
    """A fleet profile with Poisson demand on every pool at `load` of its decode capacity."""
    profile = fleet(nodes, gpus_per_node, seed)
    demand: list[PoissonDemand] = []
    for pool in profile.pools:
        capacity = 0.0
        for name in pool.workloads:
            spec = profile.workload(name)
            if spec is not None and spec.serving is not None:
                capacity += spec.replicas * spec.serving.aggregate_peak_tok_s
        output = 250
        rate = load * capacity / output * 60
        demand.append(PoissonDemand(target=pool.name, rate_per_min=rate, output_tokens=output))
    return Scenario(
        name=profile.name,
        description=f"{nodes} nodes x {gpus_per_node} cards, demand at {load:.0%} of capacity",
        profile=FleetProfile(nodes=nodes, gpus_per_node=gpus_per_node),
        seed=seed,
        mode=None,
        demand=tuple(demand),
    )
