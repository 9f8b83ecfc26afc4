"""Erlang-C staffing: textbook values, monotone in the load and the target chance."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.capacity.staffing import erlang_c, halfin_whitt_beta, servers_for


def test_erlang_c_matches_the_textbook() -> None:
    # Two servers, one erlang: C = 1/3 (e.g. Gross & Harris, M/M/2 at rho = 0.5).
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # Ten servers, eight erlangs: C ~ 0.409 (standard Erlang-C tables).
    assert erlang_c(10, 8.0) == pytest.approx(0.409, abs=0.002)


def test_the_fewest_servers_meet_the_chance_and_one_fewer_does_not() -> None:
    c = servers_for(40.0, 0.05)
    assert erlang_c(c, 40.0) <= 0.05 < erlang_c(c - 1, 40.0)


def test_a_wait_budget_needs_fewer_servers() -> None:
    assert servers_for(40.0, 0.05, 2.0) < servers_for(40.0, 0.05)


def test_above_the_exact_range_the_square_root_rule_stands_in() -> None:
    beta = halfin_whitt_beta(0.05)
    assert servers_for(5000.0, 0.05) == math.ceil(5000 + beta * math.sqrt(5000))
    # ... and agrees with the exact recursion where both apply, within a server or two.
    assert abs(servers_for(1900.0, 0.05) - (1900 + beta * math.sqrt(1900))) < 3


@given(st.floats(min_value=0.01, max_value=1500), st.floats(min_value=0.001, max_value=0.5))
def test_more_servers_than_load_and_monotone(offered: float, eps: float) -> None:
    c = servers_for(offered, eps)
    assert c > offered
    assert servers_for(offered * 1.5, eps) >= c
    assert servers_for(offered, eps / 2) >= c
