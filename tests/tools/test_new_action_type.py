"""A new action type fails type checking at every dispatch on the Action union until handled.

Every dispatch on actions is a `match` ending in `assert_never(action)`: this test adds an
action type to the union (in a copy of the product's packages, the same way a maintainer would
add one to tools/actions.py) and runs mypy over the modules that dispatch. Each
`assert_never(action)` must then be an error naming the new type, and no other line may fail:
mypy names exactly the places that must learn what the new action means.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "policies", "tools")

NEW_ACTION = '''

class ResizeCache(_Action):
    """Resize a workload's KV cache (an action type no dispatch knows yet)."""

    type: Literal["resize_cache"] = "resize_cache"
    workload: Name
    gib: int = Field(ge=1)

    @property
    def target(self) -> str:
        return self.workload

    def describe(self) -> str:
        return f"resize the KV cache of {self.workload} to {self.gib} GiB"
'''


def _with_new_action(tree: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    actions = tree / "tools" / "actions.py"
    text = actions.read_text()
    union = "RotateMode | NoOp,\n    Field(discriminator"
    assert union in text, "the Action union is no longer spelled as this test expects"
    text = text.replace(union, "RotateMode | NoOp | ResizeCache,\n    Field(discriminator")
    text = text.replace("\n\nAction = Annotated[", NEW_ACTION + "\n\nAction = Annotated[", 1)
    actions.write_text(text)


def _dispatch_sites(tree: Path) -> set[tuple[str, int]]:
    """Every `assert_never(action)`, as (path relative to the tree, line number)."""
    sites = set()
    for package in PACKAGES:
        for path in (tree / package).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if line.strip() == "assert_never(action)":
                    sites.add((path.relative_to(tree).as_posix(), number))
    return sites


def test_mypy_names_every_dispatch_a_new_action_type_must_reach(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _with_new_action(tree)
    sites = _dispatch_sites(tree)
    assert len(sites) >= 10, sites  # execute, effects, the rules, the LLM plan check, ...
    files = sorted({path for path, _ in sites})
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            *files,
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert found.returncode == 1, found.stdout + found.stderr
    errors = re.findall(r"^(\S+\.py):(\d+): error: (.*)$", found.stdout, re.MULTILINE)
    failed = {(path, int(line)) for path, line, _ in errors}
    assert failed == sites, f"mypy failed at {sorted(failed)}, dispatches are {sorted(sites)}"
    for _, _, message in errors:
        assert '"assert_never" has incompatible type "ResizeCache"' in message, message
