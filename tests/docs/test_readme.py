"""The README's tour, run: every command of its ```text examples runs from the repository root
and prints what the README shows (tests/docs/readme.py says how the examples are read), so the
README cannot drift from what the commands do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.readme import Bindings, Example, examples, matches

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


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


def test_every_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    found = examples((ROOT / "README.md").read_text(encoding="utf-8"))
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
