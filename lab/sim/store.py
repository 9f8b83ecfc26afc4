"""Persisting a simulated cluster in the data dir, so successive commands see the same one.

One JSON file, `sim.json`: the scenario (profile, seed, demand, faults as written), the faults
injected since, the demand generators' positions and RNG states, and the whole simulator state
(of its series, the last hour only).
Stdlib dataclasses serialised through pydantic's TypeAdapter: no hand-written mapping to drift.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from lab.sim.faults import Fault
from lab.sim.scenario import Scenario
from lab.sim.state import GeneratorState, SimState
from tools.errors import InvalidInput

FILENAME = "sim.json"
FORMAT = 2
"""2: every replica serves its own requests (lab.sim.serving); 1 pooled them per workload."""
SERIES_SAVED_S = 3600.0
"""The series points saved with the cluster: the last hour (a day of them is megabytes)."""


class Saved(BaseModel):
    """What `sim.json` holds."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    format: int = FORMAT
    scenario: Scenario
    injected: tuple[Fault, ...] = ()
    generators: list[GeneratorState]
    state: SimState


_ADAPTER: TypeAdapter[Saved] = TypeAdapter(Saved)


def path_in(data_dir: Path) -> Path:
    return data_dir / FILENAME


def save(data_dir: Path, saved: Saved) -> Path:
    """Write atomically and durably (a temporary file, fsynced, renamed over the old one)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    state = saved.state
    cut = state.t - SERIES_SAVED_S
    if state.series and state.series[0].t < cut:
        recent = [row for row in state.series if row.t >= cut]
        saved = saved.model_copy(update={"state": dataclasses.replace(state, series=recent)})
    target = path_in(data_dir)
    tmp = target.with_suffix(".json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, _ADAPTER.dump_json(saved))
        # Durable, not just atomic: act saves the cluster before the outcome of its actions
        # is recorded, and a log that outlives the cluster it describes is a stale world.
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    directory = os.open(data_dir, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return target


def load(data_dir: Path) -> Saved | None:
    """The saved cluster, or None if there is none; InvalidInput if the file is unreadable."""
    target = path_in(data_dir)
    if not target.exists():
        return None
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise InvalidInput(
            f"{target}: the simulated cluster cannot be read ({exc.strerror}); move it away "
            "(restore it from a backup if the data dir has a history)"
        ) from exc
    try:
        found = json.loads(raw).get("format")
    except (ValueError, AttributeError):
        found = None
    if isinstance(found, int) and found != FORMAT:
        raise InvalidInput(
            f"{target}: a simulated cluster saved in format {found}, this version reads format "
            f"{FORMAT} (its serving model changed); remove the file to start a fresh one"
        )
    try:
        return _ADAPTER.validate_json(raw)
    except ValidationError as exc:
        raise InvalidInput(
            f"{target}: not a simulated cluster this version can read ({exc.error_count()} "
            "problems); remove the file to start a fresh one"
        ) from exc
