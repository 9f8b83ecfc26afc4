"""A plan's rationale fits the log however many workloads have a note (1,000-node fleets)."""

from __future__ import annotations

from tools.actions import RATIONALE_MAX, Plan, joined_notes


def test_few_notes_are_joined_whole() -> None:
    assert joined_notes(["a: calm", "b: hot"]) == "a: calm; b: hot"


def test_many_notes_are_cut_with_a_count_and_fit() -> None:
    notes = [
        f"workload-{i:04}: calm, but kept: 1 replica absorbs 0.0 of 3.0 tok/s" for i in range(500)
    ]
    text = joined_notes(notes)
    assert len(text) <= RATIONALE_MAX
    assert text.startswith(notes[0]) and text.endswith("more note(s)")
    kept = text.count("workload-")
    assert f"and {500 - kept} more note(s)" in text
    Plan(rationale=text)  # valid as a plan's rationale


def test_a_single_note_too_long_is_counted_not_cut_mid_word() -> None:
    assert joined_notes(["x" * 10_000]) == "… and 1 more note(s)"
