"""Exceptions of the policies layer.

    tools.errors.PermanentError
    └── tools.errors.InvalidInput
        └── PolicyError        a policy file that cannot be used: every problem, with its place

A policy that does not parse or contradicts itself is refused whole: the agent never runs on a
half-read policy. A denied action is not an exception; it is a `Verdict` (see policies.engine).
"""

from __future__ import annotations

from tools.errors import InvalidInput
from tools.yamldoc import Problem

__all__ = ["PolicyError", "Problem"]


class PolicyError(InvalidInput):
    """A policy file was refused; `problems` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.column, p.message))
        super().__init__("\n".join(str(p) for p in self.problems))
