"""The README's tour, run as a newcomer runs it: first the README's first command (the agent on
the embedded cluster, through its whole day, in the default data dir), then every command of its
```text examples in order, in that same data dir, from the repository root — each prints what
the README shows (tests/docs/readme.py says how the examples are read), so the README cannot
drift from what the commands do, nor from what the commands before them left behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.readme import Bindings, Example, examples, matches

ROOT = Path(__file__).resolve().parents[2]


def _run(example: Example, scratch: Path, bindings: Bindings) -> tuple[int, list[str]]:
    command = bindings.apply(
        re.sub(r"/tmp/(\w[\w.-]*)", lambda m: str(scratch / m.group(1)), example.command)
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "STEWARD_DATA_DIR": str(scratch / "default"),  # `./.steward` in the README
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "TZ": "UTC",
    }
    for name in ("STEWARD_CONFIG", "STEWARD_LLM_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "Traceback" not in done.stderr, f"README line {example.line}: {command}\n{done.stderr}"
    out = done.stdout if example.exit_code == 0 else done.stderr + done.stdout
    lines = [line.rstrip() for line in out.replace(str(scratch) + "/", "/tmp/").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return done.returncode, lines


INSTALL_AND_RUN = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/steward run"
"""The README's first command: install, then `steward run` (what the test runs of it: the install
is this test run's own)."""
TEST_COMMAND = "./.ci/run"
"""The README's second command: exactly the CI's script."""


def first_commands(text: str) -> list[tuple[int, str]]:
    """The README's ```sh commands before its first ```text example, with their lines."""
    found: list[tuple[int, str]] = []
    in_sh = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```text"):
            break
        if line.startswith("```"):
            in_sh = line.strip() == "```sh"
        elif in_sh and line.strip():
            found.append((number, line.strip()))
    return found


def test_the_first_two_commands_install_and_run_the_agent_then_the_ci() -> None:
    commands = [c for _, c in first_commands((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert commands == [INSTALL_AND_RUN, TEST_COMMAND]
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line, first = first_commands(text)[0]
    assert first == INSTALL_AND_RUN
    # As a user's first command leaves it: the built-in day, run to its end at its own speed.
    found = [Example(line, "steward run", 0, ()), *examples(text)]
    assert len(found) >= 15, "the README's examples were not found"
    bindings = Bindings()
    drifted: list[str] = []
    for example in found:
        code, lines = _run(example, tmp_path, bindings)
        if code != example.exit_code:
            drifted.append(
                f"README line {example.line}: `{example.command}` exited {code}, the README says "
                f"{example.exit_code}:\n" + "\n".join(lines[-20:])
            )
        elif example.shown and not matches(example.shown, lines, bindings):
            drifted.append(
                f"README line {example.line}: `{example.command}` printed\n"
                + "\n".join(lines)
                + "\n--- the README shows ---\n"
                + "\n".join(example.shown)
            )
    assert not drifted, "\n\n".join(drifted)
