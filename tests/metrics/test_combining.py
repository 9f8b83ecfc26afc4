"""Series of one key combined: the spans read in C say what one series at a time says."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.metrics.prometheus.combining import Combined, combine, combined, grouped
from tools.metrics.prometheus.join import Ages

EVALUATED = 1_000.0

values = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.sampled_from([0.0, 1.0, 2.5]),
)
series = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d", None]),
        values,
        st.one_of(st.none(), st.sampled_from([990.0, 995.5, 999.0, 1_005.0])),
    ),
    max_size=30,
)


def _one_at_a_time(
    rows: list[tuple[str | None, float, float | None]], *, scale: float, summed: bool
) -> Combined:
    """What reading the series one by one says (the join's `_each`): a NaN says nothing, a
    key is dated by its oldest dated series."""
    values: dict[str, float] = {}
    stamps: dict[str, list[float]] = {}
    no_data: set[str] = set()
    for key, raw, stamp in rows:
        if key is None:
            continue
        if math.isnan(raw):
            no_data.add(key)
            continue
        combine(values, key, raw * scale, summed)
        stamps.setdefault(key, []).extend([] if stamp is None else [stamp])
    ages = {k: max(0.0, EVALUATED - min(s)) if s else 0.0 for k, s in stamps.items()}
    return Combined(values, ages, no_data - values.keys())


def _same(left: float, right: float) -> bool:
    return left == right or (math.isnan(left) and math.isnan(right))


@settings(max_examples=400, deadline=None)
@given(series, st.booleans(), st.sampled_from([1.0, 1024.0 * 1024.0, 0.001]))
def test_spans_combine_as_one_series_at_a_time_does(
    rows: list[tuple[str | None, float, float | None]], summed: bool, scale: float
) -> None:
    keys = [key for key, _, _ in rows]
    raws = [raw for _, raw, _ in rows]
    stamps = [stamp for _, _, stamp in rows]
    got = combined(keys, raws, stamps, Ages(EVALUATED), scale=scale, summed=summed)
    again = combined(
        keys, raws, stamps, Ages(EVALUATED), scale=scale, summed=summed, groups=grouped(keys)
    )
    want = _one_at_a_time(rows, scale=scale, summed=summed)
    for found in (got, again):
        assert found.values.keys() == want.values.keys()
        assert all(_same(found.values[k], want.values[k]) for k in want.values)
        assert found.ages == want.ages
        assert found.no_data == want.no_data


def test_groups_keep_each_keys_series_in_the_answers_order() -> None:
    groups = grouped(["b", "a", None, "b", "a", "c"])
    assert groups.keys == ["a", "b", "c"]
    assert [groups.places[span] for span in groups.spans] == [[1, 4], [0, 3], [5]]
