"""How the README test reads the README: commands, shown output, elisions and ids."""

from __future__ import annotations

from tests.docs.readme import Bindings, examples, matches

README = """
Intro.

```sh
pip install steward
```

```text
$ steward run --data-dir /tmp/day
480 tick(s)
…
$ steward policy check bad.yaml     # exit 2
bad.yaml:2:37: oops
$ steward place burst-llm           # ranked nodes
$ steward pending
d-0123456789ab since …
```
"""


def test_commands_their_exit_codes_and_what_they_show() -> None:
    found = examples(README)
    assert [(e.command, e.exit_code) for e in found] == [
        ("steward run --data-dir /tmp/day", 0),
        ("steward policy check bad.yaml", 2),
        ("steward place burst-llm", 0),
        ("steward pending", 0),
    ]
    assert found[0].shown == ("480 tick(s)", "…")
    assert found[2].shown == ()  # not shown: only the exit code counts
    assert found[3].line == 15


def test_an_ellipsis_line_is_any_lines_and_inside_a_line_any_text() -> None:
    b = Bindings()
    assert matches(("a", "…", "z"), ["a", "z"], b)
    assert matches(("a", "…", "z"), ["a", "b", "c", "z"], b)
    assert not matches(("a", "…", "z"), ["a", "b"], b)
    assert matches(("took … s",), ["took 1.5 s"], b)
    assert not matches(("took … s",), ["took 1.5 s, then more"], b)
    assert not matches(("a",), ["a", "b"], b)  # nothing unshown without an ellipsis


def test_ids_bind_once_and_then_must_agree() -> None:
    b = Bindings()
    assert matches(("d-0123456789ab since x",), ["d-fedcba987654 since x"], b)
    assert b.apply("steward approve d-0123456789ab") == "steward approve d-fedcba987654"
    assert not matches(("d-0123456789ab",), ["d-aaaaaaaaaaaa"], b)
    assert matches(("d-0123456789ab",), ["d-fedcba987654"], b)


def test_a_failed_match_binds_nothing() -> None:
    b = Bindings()
    assert not matches(("d-0123456789ab", "x"), ["d-fedcba987654", "y"], b)
    assert b.ids == {}
