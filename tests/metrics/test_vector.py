"""An answer is decoded by `json`: its columns, values and evaluation time are the decoded
label sets', for any label names and values (escapes, braces, quotes, other scripts), and what is
not an instant vector's answer is refused or reported unreadable.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.metrics.prometheus.client import QueryRefused, vector_from
from tools.metrics.prometheus.vector import Vector

NAMES = ("UUID", "pod", "namespace", "steward_t", "gpu", "Hostname", "status", "value", "metric")
"""Label names, among them some the envelope of an answer uses as keys."""
NASTY = ("}", "{", '"', "\\", ",", ":", '"metric":{', '},"value":[', '"]}]}', "é", "\u2028", " ")

label_values = st.one_of(
    st.text(alphabet="abcdefGPU-0123456789.", max_size=12),
    st.sampled_from(NASTY),
    st.text(max_size=6),
)
label_sets = st.dictionaries(st.sampled_from(NAMES), label_values, max_size=5)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6).map(float)
)


def _prometheus_text(series: list[tuple[dict[str, str], float]], at: float) -> str:
    """The answer as Prometheus's encoder writes it: compact, each label set's names sorted,
    non-ASCII as it is."""
    return Vector(at, series).text


def _decoded(text: str) -> Vector:
    body = json.loads(text)
    series = [(item["metric"], float(item["value"][1])) for item in body["data"]["result"]]
    at = float(body["data"]["result"][0]["value"][0]) if series else 7.0
    return Vector(at, series)


def _same(a: Vector, b: Vector) -> None:
    assert a.evaluated_at == b.evaluated_at
    assert len(a) == len(b)
    for x, y in zip(a.values, b.values, strict=True):
        assert x == y or (math.isnan(x) and math.isnan(y))
    assert a.labels == b.labels
    for name in NAMES:
        assert a.column(name) == b.column(name), name
        assert a.carries(name) == b.carries(name), name
    assert a.first == b.first


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(label_sets, values), max_size=8), st.sampled_from([1.5, 1e9 + 0.123]))
def test_columns_are_the_decoded_label_sets(
    series: list[tuple[dict[str, str], float]], at: float
) -> None:
    text = _prometheus_text(series, at)
    _same(vector_from(text, "q", 7.0, columns=("UUID", "steward_t")), _decoded(text))


def test_a_label_some_series_lack_is_none_in_its_column() -> None:
    series = [({"UUID": "GPU-0", "memory_source": "host"}, 1.0), ({"UUID": "GPU-1"}, 2.0)]
    answer = vector_from(_prometheus_text(series, 100.0), "q", 0.0)
    assert answer.column("memory_source") == ["host", None]
    assert answer.whole("memory_source") is None and answer.whole("UUID") == ["GPU-0", "GPU-1"]
    assert answer.carries("memory_source") and not answer.carries("model_name")


def test_warnings_after_the_result_are_left_alone() -> None:
    text = _prometheus_text([({"UUID": "GPU-0"}, 1.0)], 100.0)
    warned = text[:-1] + ',"warnings":["PromQL warning: something"],"infos":["x"]}'
    assert vector_from(warned, "q", 0.0).column("UUID") == ["GPU-0"]


def test_an_empty_answer_is_dated_by_the_time_asked_for() -> None:
    answer = vector_from(_prometheus_text([], 100.0), "q", 42.0, columns=("UUID",))
    assert len(answer) == 0 and answer.evaluated_at == 42.0
    assert answer.column("UUID") == [] and answer.first == {}


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t[: len(t) // 2],  # cut short in the middle of a series
        lambda t: t.replace('"resultType":"vector"', '"resultType":"matrix"'),
        lambda t: t.replace('"value":[100,"2.0"]', '"histogram":[100,{"count":"1"}]'),
    ],
    ids=["cut", "matrix", "native-histogram"],
)
def test_what_is_not_an_instant_vector_is_refused_or_unreadable(change: object) -> None:
    text = _prometheus_text([({"UUID": "GPU-0"}, 1.0), ({"UUID": "GPU-1"}, 2.0)], 100)
    assert callable(change)
    changed = change(text)
    assert changed != text
    with pytest.raises((ValueError, KeyError, QueryRefused)):
        vector_from(changed, "q", 0.0)


def test_a_reformatted_answer_reads_the_same() -> None:
    text = _prometheus_text([({"UUID": "GPU-0"}, 1.0), ({"UUID": "GPU-1"}, 2.0)], 100)
    spaced = json.dumps(json.loads(text), indent=2)
    _same(vector_from(spaced, "q", 0.0), _decoded(text))


def test_an_error_answer_is_refused_with_prometheus_own_words() -> None:
    text = '{"status":"error","errorType":"bad_data","error":"parse error at char 4"}'
    with pytest.raises(QueryRefused, match="bad_data: parse error at char 4"):
        vector_from(text, "q", 0.0)
