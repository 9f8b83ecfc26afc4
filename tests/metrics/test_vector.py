"""An answer read as Prometheus writes it says what `json` decoding says, or is left to `json`.

`Vector.from_json` scans the text for the labels the join reads instead of building a dict per
series; these hold its columns, values and evaluation time to the decoded JSON's, for any label
names and values (escapes, braces, quotes, other scripts), and check that anything it cannot
read exactly — a reformatted, cut-short or non-vector answer — is decoded by `json` instead.
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
def test_columns_read_from_the_text_are_the_decoded_ones(
    series: list[tuple[dict[str, str], float]], at: float
) -> None:
    text = _prometheus_text(series, at)
    fast = Vector.from_json(text, empty_at=7.0, columns=("UUID", "steward_t"))
    if fast is None:
        # Only an escape, which a scan cannot see past, is left to `json`.
        assert "\\" in text
    else:
        _same(fast, _decoded(text))
    _same(vector_from(text, "q", 7.0), _decoded(text))


def test_a_plain_answer_is_read_without_decoding_a_label_set() -> None:
    series = [({"UUID": f"GPU-{i}", "steward_t": "99.5", "pod": "p"}, float(i)) for i in range(3)]
    fast = Vector.from_json(_prometheus_text(series, 100.0), empty_at=0.0, columns=("UUID",))
    assert fast is not None
    assert fast.column("UUID") == ["GPU-0", "GPU-1", "GPU-2"]
    assert fast.values == [0.0, 1.0, 2.0] and fast.evaluated_at == 100.0
    assert fast.scanned and fast._labels is None  # the point: no dict per series was made
    assert fast.column("model_name") == [None, None, None] and not fast.carries("model_name")
    assert fast.first == {"UUID": "GPU-0", "pod": "p", "steward_t": "99.5"}


def test_a_label_some_series_lack_is_read_from_their_label_sets() -> None:
    series = [({"UUID": "GPU-0", "memory_source": "host"}, 1.0), ({"UUID": "GPU-1"}, 2.0)]
    fast = Vector.from_json(_prometheus_text(series, 100.0), empty_at=0.0)
    assert fast is not None
    assert fast.column("memory_source") == ["host", None]
    assert fast.carries("memory_source")


def test_warnings_after_the_result_are_left_alone() -> None:
    text = _prometheus_text([({"UUID": "GPU-0"}, 1.0)], 100.0)
    warned = text[:-1] + ',"warnings":["PromQL warning: something"],"infos":["x"]}'
    fast = Vector.from_json(warned, empty_at=0.0)
    assert fast is not None and fast.column("UUID") == ["GPU-0"]


def test_an_empty_answer_is_dated_by_the_time_asked_for() -> None:
    fast = Vector.from_json(_prometheus_text([], 100.0), empty_at=42.0, columns=("UUID",))
    assert fast is not None and len(fast) == 0 and fast.evaluated_at == 42.0
    assert fast.column("UUID") == [] and fast.first == {}


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t[: len(t) // 2],  # cut short in the middle of a series
        lambda t: t[: t.rfind("]}")],  # the last series whole, the result not closed
        lambda t: t.replace(":", ": "),  # a proxy that reformats
        lambda t: t.replace('"value":[100,"2.0"]', '"histogram":[100,{"count":"1"}]'),
    ],
    ids=["cut", "unclosed", "spaced", "native-histogram"],
)
def test_anything_else_goes_to_json(change: object) -> None:
    text = _prometheus_text([({"UUID": "GPU-0"}, 1.0), ({"UUID": "GPU-1"}, 2.0)], 100)
    assert callable(change)
    changed = change(text)
    assert changed != text
    assert Vector.from_json(changed, empty_at=0.0) is None
    try:
        decoded = vector_from(changed, "q", 0.0)
    except (ValueError, KeyError, QueryRefused):
        return  # not an answer: the source reports it unreadable, naming the family
    assert not decoded.scanned
    _same(decoded, _decoded(changed))


def test_an_error_answer_is_refused_with_prometheus_own_words() -> None:
    text = '{"status":"error","errorType":"bad_data","error":"parse error at char 4"}'
    with pytest.raises(QueryRefused, match="bad_data: parse error at char 4"):
        vector_from(text, "q", 0.0)
