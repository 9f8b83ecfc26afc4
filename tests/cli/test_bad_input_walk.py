"""Every door refuses bad input with one clear line and an exit code, never a traceback.

Each case runs the real `steward` command in a subprocess with one bad input — a port in use, a
data dir that cannot be made, a corrupt database, a binary or UTF-16 file, an absurd duration,
deep nesting, a hostile id — and fails on any traceback, on an exit code other than the
documented ones (2 bad input, 1 a check failed), or on a message that names nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    codes: tuple[int, ...] = (2,)
    says: str = ""
    """A fragment the message must contain (what is wrong, or where)."""
    env: dict[str, str] = field(default_factory=dict)


def _files(tmp: Path) -> dict[str, Path]:
    binary = tmp / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    utf16 = tmp / "utf16.yaml"
    utf16.write_text("version: 1\npools: {}\n", encoding="utf-16")
    huge = tmp / "huge.yaml"
    huge.write_text(
        "version: 1\ncooldowns:\n  by_action:\n    scale_workload: 999999999999999999999999d\n"
    )
    passwd = tmp / "passwd-trace.yaml"
    passwd.write_text(
        "name: t\ndemand:\n  - kind: trace\n    target: resident-a\n    path: /etc/passwd\n"
    )
    a_file = tmp / "a-file"
    a_file.write_text("not a directory\n")
    corrupt = tmp / "corrupt"
    corrupt.mkdir()
    (corrupt / "audit.db").write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    return {
        "binary": binary,
        "utf16": utf16,
        "huge": huge,
        "passwd": passwd,
        "a_file": a_file,
        "corrupt": corrupt,
    }


def _cases(tmp: Path, busy_port: int) -> Iterator[Case]:
    f = {k: str(v) for k, v in _files(tmp).items()}
    d = str(tmp / "data")
    nested = "[" * 60_000 + "]" * 60_000
    yield Case("port in use", ("run", "--ticks", "1", "--speed", "0", "--port", str(busy_port),
                               "--data-dir", d), says=str(busy_port))  # fmt: skip
    for command in (("status",), ("run", "--ticks", "1"), ("plan",), ("pending",)):
        yield Case(f"{command[0]} on /proc/nope", (*command, "--data-dir", "/proc/nope"),
                   says="/proc/nope")  # fmt: skip
    yield Case("audit verify on a corrupt log", ("audit", "verify", "--data-dir", f["corrupt"]),
               codes=(1, 2), says="audit.db")  # fmt: skip
    yield Case("run on a corrupt log", ("run", "--ticks", "1", "--data-dir", f["corrupt"]),
               codes=(1, 2), says="audit.db")  # fmt: skip
    yield Case("binary policy", ("policy", "check", f["binary"]), says=f["binary"])
    yield Case("UTF-16 policy", ("policy", "check", f["utf16"]), says=f["utf16"])
    yield Case("binary scenario", ("status", "--scenario", f["binary"], "--data-dir", d),
               says=f["binary"])  # fmt: skip
    yield Case("UTF-16 scenario", ("status", "--scenario", f["utf16"], "--data-dir", d),
               says=f["utf16"])  # fmt: skip
    yield Case("absurd duration", ("policy", "check", f["huge"]), says="scale_workload")
    yield Case("deep nesting", ("policy", "explain", "--action", nested), says="--action")
    yield Case("hostile id", ("audit", "explain", "../../etc/passwd;rm -rf /", "--data-dir", d),
               codes=(1, 2))  # fmt: skip
    yield Case("non-UTF-8 id", ("approve", "d-\udcff\udcfe", "--data-dir", d), codes=(1, 2))
    yield Case("data dir is a file", ("status",), env={"STEWARD_DATA_DIR": f["a_file"]},
               says=f["a_file"])  # fmt: skip
    yield Case("trace outside any trace (status)", ("status", "--scenario", f["passwd"],
               "--data-dir", str(tmp / "p1")), says="/etc/passwd")  # fmt: skip
    p2 = str(tmp / "p2")
    yield Case("trace outside any trace (run)", ("run", "--ticks", "2", "--speed", "0",
               "--scenario", f["passwd"], "--data-dir", p2), says="/etc/passwd")  # fmt: skip
    yield Case("unbounded fleet", ("bench", "loop", "--nodes", "999999999"), says="--nodes")
    yield Case("unknown flag", ("status", "--colour"), says="--colour")
    yield Case("binary config", ("config", "check", f["binary"]), says=f["binary"])
    yield Case("infinite interval", ("run", "--interval", "inf", "--data-dir", d),
               says="--interval")  # fmt: skip


def _steward(case: Case) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *case.args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=60,
        env={**os.environ, **case.env},
        check=False,
    )


@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_every_door_refuses_bad_input_without_a_traceback(tmp_path: Path, busy_port: int) -> None:
    failures: list[str] = []
    for case in _cases(tmp_path, busy_port):
        try:
            done = _steward(case)
        except subprocess.TimeoutExpired:
            failures.append(f"{case.name}: no answer within 60 s")
            continue
        out = done.stdout + done.stderr
        problems = []
        if "Traceback" in out:
            problems.append("traceback")
        if done.returncode not in case.codes:
            problems.append(f"exit {done.returncode} (want {case.codes})")
        if case.says and case.says not in out:
            problems.append(f"does not name {case.says!r}")
        if problems:
            failures.append(f"{case.name}: {', '.join(problems)}: {out.strip()[-300:]!r}")
    assert not failures, "\n".join(failures)
