"""The README's examples as a test sees them: commands, the output they show, and elisions.

Only ```text blocks are examples (```sh blocks are instructions). In one:
- a line starting with `$ ` is a command, run by bash from the repository root; what follows it
  up to the next command is the output it shows (nothing shown: only its exit code is checked);
- a trailing `# exit N` on a command says its exit code (default 0); any other trailing
  `# comment` is for the reader;
- a line that is `…` alone stands for any number of lines, `…` inside a line for any text;
- a decision id (`d-` and 12 hex digits) stands for the id the run made: the first time it is
  seen it is bound to the real one, and later commands and outputs use the real one;
- `/tmp/NAME` is a directory of the test's own.
The output compared is stdout; for a command expected to fail, stderr then stdout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ELLIPSIS = "…"
ID = re.compile(r"d-[0-9a-f]{12}")
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\b.*$")
COMMENT = re.compile(r"\s{2,}#\s.*$")


@dataclass(frozen=True)
class Example:
    line: int  # the command's line in the README, for the failure message
    command: str
    exit_code: int
    shown: tuple[str, ...]


def examples(text: str) -> list[Example]:
    found: list[Example] = []
    in_text = False
    current: tuple[int, str, int] | None = None
    shown: list[str] = []

    def close() -> None:
        nonlocal current, shown
        if current is not None:
            while shown and not shown[-1].strip():
                shown.pop()
            found.append(Example(current[0], current[1], current[2], tuple(shown)))
        current, shown = None, []

    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith("```"):
            if in_text:
                close()
            in_text = raw.strip() == "```text"
            continue
        if not in_text:
            continue
        if raw.startswith("$ "):
            close()
            command = raw[2:]
            code = 0
            if m := EXIT.search(command):
                code, command = int(m.group(1)), command[: m.start()]
            command = COMMENT.sub("", command).rstrip()
            current = (number, command, code)
        elif current is not None:
            shown.append(raw.rstrip())
    close()
    return found


@dataclass
class Bindings:
    """README decision ids bound to the ones the run made."""

    ids: dict[str, str] = field(default_factory=dict)

    def apply(self, text: str) -> str:
        return ID.sub(lambda m: self.ids.get(m.group(0), m.group(0)), text)


def _pattern(line: str, bindings: Bindings) -> tuple[re.Pattern[str], list[str]]:
    """A shown line as a regex; its unbound ids become groups, in order."""
    parts: list[str] = []
    unbound: list[str] = []
    for piece in re.split(r"(…|d-[0-9a-f]{12})", line):
        if piece == ELLIPSIS:
            parts.append(".*?")
        elif ID.fullmatch(piece):
            if piece in bindings.ids:
                parts.append(re.escape(bindings.ids[piece]))
            elif piece in unbound:
                parts.append(f"(?P=u{unbound.index(piece)})")
            else:
                parts.append(f"(?P<u{len(unbound)}>d-[0-9a-f]{{12}})")
                unbound.append(piece)
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts) + r"\Z"), unbound


def matches(shown: tuple[str, ...], actual: list[str], bindings: Bindings) -> bool:
    """Whether the actual lines are what the README shows (binding its ids on success)."""

    def walk(i: int, j: int, ids: dict[str, str]) -> dict[str, str] | None:
        if i == len(shown):
            return ids if j == len(actual) else None
        if shown[i] == ELLIPSIS:
            for k in range(j, len(actual) + 1):
                got = walk(i + 1, k, ids)
                if got is not None:
                    return got
            return None
        if j == len(actual):
            return None
        pattern, unbound = _pattern(shown[i], Bindings({**bindings.ids, **ids}))
        m = pattern.match(actual[j])
        if m is None:
            return None
        return walk(i + 1, j + 1, {**ids, **{u: m.group(f"u{n}") for n, u in enumerate(unbound)}})

    got = walk(0, 0, {})
    if got is None:
        return False
    bindings.ids.update(got)
    return True
