"""A signed log cannot be laundered without the key, and a rollback is caught by a witness
kept outside the data dir — through the real `steward` commands.

Before: with STEWARD_AUDIT_KEY set, deleting a record, rewriting the chain and stripping every
MAC and audit.head's MAC made `audit verify` fail, but the next `steward run` opened the log
without a word, signed new records on top, and verify then said "ok … every record's HMAC
checked". Deleting audit.head was flagged by verify and silently rewritten by the next run.
Rolling back audit.db and audit.head together to an older copy was invisible even with the key.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from agent.audit import DB_NAME, HEAD_FILE, KEY_ENV
from agent.audit.chain import canonical_json, hash_body
from tests.audit import tamper

KEY = "correct horse battery staple"


def steward(*args: str, key: str | None = KEY) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    if key is not None:
        env[KEY_ENV] = key
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def run(data: Path, ticks: int, *extra: str) -> tuple[int, str]:
    return steward("run", "--ticks", str(ticks), "--speed", "0", "--data-dir", str(data), *extra)


def records(data: Path) -> int:
    with closing(sqlite3.connect(data / DB_NAME)) as conn:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])


def rows(data: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(data / DB_NAME)) as conn:
        found = conn.execute("SELECT * FROM records ORDER BY seq").fetchall()
        return [*found, *conn.execute("SELECT * FROM head").fetchall()]


def launder(data: Path, gone: int) -> None:
    """Delete record `gone`, renumber and rechain the rest, strip every MAC (records, anchor,
    audit.head): what an attacker without the key can do to make the log look never signed."""
    db = data / DB_NAME
    with closing(tamper.connect(db)) as conn:
        conn.execute("DELETE FROM records WHERE seq = ?", (gone,))
        last = conn.execute("SELECT max(seq) FROM records").fetchone()[0]
        prev = conn.execute("SELECT hash FROM records WHERE seq = ?", (gone - 1,)).fetchone()[0]
        for old in range(gone + 1, last + 1):
            data_ = tamper.body(conn, old)
            data_["seq"], data_["prev_hash"] = old - 1, prev
            text = canonical_json(data_)
            prev = hash_body(text)
            conn.execute(
                "UPDATE records SET seq = ?, prev_hash = ?, body = ?, hash = ? WHERE seq = ?",
                (old - 1, data_["prev_hash"], text, prev, old),
            )
        conn.execute("UPDATE records SET mac = NULL")
        conn.execute("UPDATE head SET seq = ?, hash = ?, mac = NULL", (last - 1, prev))
    tamper.rewitness(data)  # audit.head rewritten to the new head, without a MAC


def test_a_laundered_log_stops_the_agent_and_fails_verify(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out = run(data, 150)
    assert code == 0, out
    before = records(data)
    assert before >= 5, out
    launder(data, 3)
    laundered = rows(data)

    code, out = run(data, 5)

    assert code == 2, out
    assert "Traceback" not in out
    assert "record seq 1 carries no HMAC (hmac_missing)" in out, out
    assert "audit.signing" in out and "does not sign over it" in out
    assert rows(data) == laundered  # nothing was signed over the evidence

    code, out = steward("audit", "verify", "--data-dir", str(data))
    assert code == 1, out
    assert "record seq 1: hmac_missing" in out, out
    # The same without the key: a missing MAC needs no key to be seen.
    code, out = steward("audit", "verify", "--data-dir", str(data), key=None)
    assert code == 1 and "record seq 1: hmac_missing" in out, out


def test_a_deleted_audit_head_stops_the_agent(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(data, 20)[0] == 0
    (data / HEAD_FILE).unlink()

    code, out = run(data, 5)

    assert code == 2, out
    assert f"{data / HEAD_FILE}, the head held outside it, is gone" in out, out
    assert not (data / HEAD_FILE).exists()  # not witnessed afresh
    code, out = steward("audit", "verify", "--data-dir", str(data))
    assert code == 1 and "unwitnessed" in out, out


def test_a_rollback_of_log_and_head_is_caught_by_the_witness(tmp_path: Path) -> None:
    data = tmp_path / "data"
    witness_file = tmp_path / "elsewhere" / "steward.witness"
    witness_file.parent.mkdir()
    config = tmp_path / "steward.yaml"
    config.write_text(f"audit:\n  witness: {witness_file}\n")
    code, out = run(data, 60, "--config", str(config))
    assert code == 0, out
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in (DB_NAME, HEAD_FILE):
        shutil.copy(data / name, kept / name)
    older = records(data)
    code, out = run(data, 120, "--config", str(config))
    assert code == 0, out
    assert records(data) > older, out
    last = json.loads(witness_file.read_text().splitlines()[-1])
    assert last["seq"] == records(data) and last["mac"]  # the head, signed, outside
    for name in (DB_NAME, HEAD_FILE):  # both put back from the older copy
        (data / name).unlink()
        shutil.copy(kept / name, data / name)
    for leftover in data.glob(f"{DB_NAME}-*"):
        leftover.unlink()  # the WAL of the newer log goes too

    code, out = steward("audit", "verify", "--data-dir", str(data))
    assert code == 0, out  # consistent with itself: without a witness, invisible

    code, out = steward("audit", "verify", "--data-dir", str(data), "--witness", str(witness_file))
    assert code == 1, out
    assert f"rolled_back — the witness file {witness_file} says seq {last['seq']}" in out, out
    assert f"the log ends at seq {older}" in out

    code, out = steward(
        "audit", "verify", "--data-dir", str(data), "--witness", f"{last['seq']}:{last['hash']}"
    )
    assert code == 1 and "rolled_back" in out, out
