"""How much a hand-written YAML file may ask of the agent: its size, its depth, its aliases and
the size of its numbers — checked before the document is built, so that no file can exhaust
memory or time.

Policies, steward.yaml and scenarios are read whole and then composed into a tree; without
limits `/dev/zero` given as a policy grew to 8 GB, a 51 MB policy ran for minutes, a deeply nested
document ended in a RecursionError and a few aliases that refer to each other expand to billions
of nodes ("billion laughs"). So a file is read at most MAX_BYTES (+1, to know it is larger), and
its YAML events — from ruamel.yaml's own parser, the one that then builds the document, so the
two can never disagree on what the file holds — are counted before anything is composed: nesting
deeper than MAX_DEPTH, more than MAX_ALIASES aliases, or more than MAX_NODES nodes once every
alias is expanded is refused at the place it happens. A plain number beyond ±MAX_NUMBER (or
.inf, .nan) is refused there too: no count, duration or size in these files comes near it, and a
field's own bounds (replicas, memory, times) are checked by its model. `parse_mapping` reads a
document within these bounds, its syntax errors at their place (tools.yamldoc.Problem).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)

from tools.yamldoc import Problem, YamlProblem

MAX_BYTES = 1 << 20
"""1 MiB: the largest fleet policy or scenario shipped is a few KiB."""
MAX_DEPTH = 32
"""Nesting levels of mappings and lists; the deepest file shipped has 6."""
MAX_ALIASES = 100
MAX_NODES = 100_000
"""Scalars, mappings and lists once every alias is expanded."""
MAX_NUMBER = 1e12

_NUMBER = re.compile(
    r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)


def read_text(path: Path, file: str, what: str) -> str:
    """The UTF-8 text of `path`, at most MAX_BYTES read whatever it is (a device, a pipe, a
    huge file); YamlProblem when there is more. OSError and UnicodeDecodeError as `open` and
    `decode` raise them, for the caller to word."""
    with path.open("rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlProblem(Problem(file, 1, 1, _too_large(path, what)))
    return data.decode("utf-8")


def _too_large(path: Path, what: str) -> str:
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    shown = f" ({size / 1e6:.1f} MB)" if size else ""
    return (
        f"{what} is larger than {MAX_BYTES >> 20} MiB{shown}: no policy, config or scenario "
        "needs that much; is this the file you meant?"
    )


@dataclass
class _Open:
    """A mapping or list being read: its anchor, its size so far, where its next item goes."""

    anchor: str | None
    mapping: bool
    size: int = 1
    items: int = 0
    key: str = ""

    def place(self) -> str:
        """The key (or index) of the item being read in it."""
        if self.mapping:
            return self.key if self.items % 2 else "(a key)"
        return str(self.items)

    def took(self, size: int, scalar: str | None) -> None:
        if self.mapping and self.items % 2 == 0:
            self.key = scalar if scalar is not None else "(a complex key)"
        self.size += size
        self.items += 1


def check(text: str, file: str) -> None:
    """Refuse `text` if it is too large, too deep, too aliased or holds an absurd number;
    YamlProblem at the place (1-based line and column) where the limit was passed."""
    if len(text) > MAX_BYTES and len(text.encode()) > MAX_BYTES:
        raise YamlProblem(Problem(file, 1, 1, _too_large(Path(file), "the document")))
    opened: list[_Open] = []
    anchored: dict[str, int] = {}
    aliases = 0
    total = 0
    try:
        for event in YAML(typ="rt").parse(text):
            if not isinstance(event, NodeEvent | CollectionEndEvent):
                continue
            mark = event.start_mark
            where = (mark.line + 1, mark.column + 1)
            scalar = None
            if isinstance(event, CollectionStartEvent):
                if len(opened) >= MAX_DEPTH:
                    _refuse(file, where, f"nested deeper than {MAX_DEPTH} levels")
                opened.append(_Open(event.anchor, isinstance(event, MappingStartEvent)))
                total += 1
                continue
            if isinstance(event, CollectionEndEvent):
                done = opened.pop()
                size = done.size
                if done.anchor is not None:
                    anchored[done.anchor] = size
            elif isinstance(event, AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    _refuse(file, where, f"more than {MAX_ALIASES} aliases (*name)")
                if any(o.anchor == event.anchor for o in opened):
                    _refuse(file, where, f"the alias *{event.anchor} refers to itself")
                size = anchored.get(str(event.anchor), 1)
                total += size
            else:
                assert isinstance(event, ScalarEvent)
                size, scalar = 1, str(event.value)
                total += 1
                if event.anchor is not None:
                    anchored[event.anchor] = 1
                if event.style is None and _absurd(scalar):
                    name = ".".join(o.place() for o in opened) or "(the document)"
                    raise YamlProblem(
                        Problem(
                            file,
                            *where,
                            f"{name}: the number {scalar[:40]} is beyond any value these files "
                            f"hold (at most ±{MAX_NUMBER:.0e}, finite)",
                        )
                    )
            if total > MAX_NODES:
                _refuse(file, where, f"more than {MAX_NODES} values once its aliases are expanded")
            if opened:
                opened[-1].took(size, scalar)
    except MarkedYAMLError:
        return  # a syntax error: the loader names it, at its place
    except YAMLError:
        return


def _absurd(value: str) -> bool:
    """Whether a plain scalar is a number beyond ±MAX_NUMBER, or not finite."""
    if not _NUMBER.fullmatch(value):
        return False
    spelled = value.replace("_", "").lower()
    try:
        number = float(spelled.replace(".inf", "inf").replace(".nan", "nan"))
    except ValueError:
        return False
    return not math.isfinite(number) or abs(number) > MAX_NUMBER


def _refuse(file: str, where: tuple[int, int], why: str) -> None:
    raise YamlProblem(Problem(file, where[0], where[1], f"refused: {why}"))


def parse_mapping(text: str, file: str, what: str) -> CommentedMap:
    """The YAML mapping in `text`; YamlProblem at the place of a syntax error, or with `what`
    (what the document should be) when it is not a mapping. The document is checked against
    the bounds above (size, depth, aliases, numbers) before it is built."""
    check(text, file)
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        message = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise YamlProblem(Problem(file, line, col, f"YAML syntax: {message}")) from exc
    except YAMLError as exc:
        raise YamlProblem(Problem(file, 1, 1, f"YAML syntax: {exc}")) from exc
    if not isinstance(data, CommentedMap):
        raise YamlProblem(Problem(file, 1, 1, what))
    return data
