"""A reading made in bulk is the reading validation makes, and a bad one is refused by name."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tools.metric import MISSING, Metric, made, made_all
from tools.model import Gpu

AT = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)
values = st.floats(allow_nan=False, allow_infinity=False)


@given(st.lists(st.tuples(values, st.integers(0, 3600)), max_size=40), st.text(max_size=12))
def test_readings_made_in_bulk_are_the_validated_ones(
    rows: list[tuple[float, int]], src: str
) -> None:
    ats = [AT - timedelta(seconds=s) for _, s in rows]
    bulk = made_all([v for v, _ in rows], "fresh", ats, src)
    validated = [
        Metric(value=v, status="fresh", observed_at=at, source=src)
        for (v, _), at in zip(rows, ats, strict=True)
    ]
    assert bulk == validated
    assert [hash(m) for m in bulk] == [hash(m) for m in validated]
    assert [m.as_json() for m in bulk] == [m.as_json() for m in validated]
    one = [made(v, "fresh", at, src) for (v, _), at in zip(rows, ats, strict=True)]
    assert one == validated


def test_a_reading_is_frozen_and_slotted() -> None:
    reading = made(1.0, "fresh", AT, "dcgm")
    with pytest.raises(AttributeError):
        reading.value = 2.0  # type: ignore[misc]
    assert not hasattr(reading, "__dict__")


def test_a_reading_round_trips_through_json_and_pickle_inside_a_model() -> None:
    reading = made(41.5, "stale", AT, "prometheus:gpu_util")
    gpu = Gpu(uuid="GPU-1", index=0, model="H200", node="n1", utilization=reading)
    dumped = json.loads(gpu.model_dump_json())
    assert dumped["utilization"] == {
        "value": 41.5,
        "status": "stale",
        "observed_at": "2026-03-04T17:00:00Z",
        "source": "prometheus:gpu_util",
    }
    assert Gpu.model_validate_json(gpu.model_dump_json()) == gpu
    assert Metric.parse(reading.as_json()) == reading
    assert pickle.loads(pickle.dumps(gpu)) == gpu
    assert Gpu(uuid="GPU-2", index=1, model="H200", node="n1").power_w is MISSING


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"value": 1.0, "status": "fresh", "colour": "red"}, "colour"),
        ({"value": "lots", "status": "fresh"}, "value"),
        ({"value": 1.0, "status": "green"}, "status"),
        ({"observed_at": "yesterday"}, "observed_at"),
    ],
)
def test_a_bad_reading_is_refused_naming_the_field(raw: dict[str, object], where: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Gpu.model_validate(
            {"uuid": "GPU-1", "index": 0, "model": "H200", "node": "n1", "power_w": raw}
        )
    assert f"power_w.{where}" in str(refused.value)
    with pytest.raises(ValidationError):
        Metric.parse(raw)


def test_but_and_aged_make_new_readings_and_leave_the_old_one() -> None:
    reading = made(1.0, "fresh", AT, "dcgm")
    stale = reading.aged(AT + timedelta(seconds=120), 90.0)
    assert stale.status == "stale" and reading.status == "fresh" and stale.value == 1.0
    assert reading.aged(AT + timedelta(seconds=30), 90.0) is reading
    assert reading.but(source="nvml").source == "nvml" and reading.source == "dcgm"
    with pytest.raises(ValidationError):
        reading.but(status="lost")
