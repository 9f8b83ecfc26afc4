"""`steward approve|deny --json`: one document on stdout, taken or not, for scripts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.approvals.conftest import cli
from tests.approvals.test_late_approval import wait_for_approval
from tests.loop.conftest import APPROVE_BURST, open_runtime
from tests.loop.test_approval import SPIKE

POLICY = ("--policy", str(APPROVE_BURST))


def test_an_approval_taken_is_one_json_document(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--json", "--data-dir", str(data_dir), *POLICY
    )
    assert code == 0, out
    doc = json.loads(out)
    assert doc["decision_id"] == decision and doc["status"] == "answered"
    assert doc["answer"] == "approved" and doc["by"] == "homelab-owner"
    assert decision in doc["message"]


def test_a_refused_answer_is_a_document_too_and_exits_1(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    code, out = cli(
        "deny", decision, "--reason", "not now", "--json", "--data-dir", str(data_dir), *POLICY
    )
    assert code == 1
    doc = json.loads(out)  # the OS user is no approver of this policy
    assert doc["status"] == "not_allowed" and doc["answer"] == "denied"
    assert doc["reason"] == "not now" and "may not answer" in doc["message"]
    code, out = cli(
        "deny", decision, "--reason", "not now", "--as", "homelab-owner", "--json",
        "--data-dir", str(data_dir), *POLICY,
    )  # fmt: skip
    assert code == 0 and json.loads(out)["status"] == "answered"
