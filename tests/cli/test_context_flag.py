"""`--context` names the kubeconfig's context on every command, as kubectl's; `steward fit`'s
context length is `--context-length`. A script that still writes `fit --context 65536` gets the
same answer and a warning on stderr; a line that could be read two ways is refused (exit 2),
never read one way in silence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.cli.placement import fit_context
from tools.errors import InvalidInput

MODEL = ("fit", "--model", "deepseek-v4-flash")


def steward(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_context_length_is_the_tokens() -> None:
    code, out, err = steward(*MODEL, "--context-length", "65536", "--json")
    assert code == 0, err
    assert json.loads(out)["context"] == 65_536
    assert err == ""


def test_the_old_spelling_still_reads_tokens_with_a_warning() -> None:
    code, out, err = steward(*MODEL, "--context", "65536", "--json")
    assert code == 0, err
    assert json.loads(out)["context"] == 65_536  # stdout: the JSON document alone
    assert "warning: `fit --context 65536` is the old spelling of --context-length 65536" in err


def test_a_number_beside_context_length_is_refused() -> None:
    code, out, err = steward(*MODEL, "--context-length", "8192", "--context", "65536")
    assert code == 2 and out == ""
    assert "--context 65536 and --context-length 8192" in err
    assert "give the tokens once, with --context-length" in err


def test_a_context_name_without_node_is_refused_naming_the_token_flag() -> None:
    code, _, err = steward(*MODEL, "--context", "gpu-prod")
    assert code == 2
    assert "--context names a cluster, but fit reads one only for --node NAME" in err
    assert "--context-length N" in err


def test_kubeconfig_without_node_is_refused(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    code, _, err = steward(
        *MODEL, "--context-length", "4096", "--kubeconfig", str(kubeconfig), "--context", "prod"
    )
    assert code == 2
    assert "--kubeconfig and --context name a cluster" in err


def test_fit_on_a_node_takes_the_context_as_every_command_does(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        "clusters: [{name: lab, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: me}}]\n"
        "users: [{name: me, user: {}}]\n"
    )
    for context in ("--context", "--kube-context"):  # the old flag: the same, with a warning
        code, _, err = steward(
            "fit", "--model", "qwen3-32b", "--context-length", "8192", "--node", "gx10-a",
            "--kubeconfig", str(kubeconfig), context, "gpu-prod",
            "--data-dir", str(tmp_path / "data"),
        )  # fmt: skip
        # The kubernetes backend was asked for that context: the kubeconfig lacks it.
        assert code == 2, err
        assert "gpu-prod" in err and "lab" in err, err
        assert "Traceback" not in err
        assert ("--kube-context is deprecated" in err) == (context == "--kube-context")


@pytest.mark.parametrize(
    ("context", "length", "old", "expected"),
    [
        (None, 4096, None, (4096, None)),
        ("65536", None, None, (65536, None)),
        ("gpu-prod", 4096, None, (4096, "gpu-prod")),
        ("8192", None, "gpu-prod", (8192, "gpu-prod")),
        (None, 4096, "gpu-prod", (4096, "gpu-prod")),
    ],
)
def test_fit_context_reads_each_combination_one_way(
    context: str | None, length: int | None, old: str | None, expected: tuple[int, str | None]
) -> None:
    tokens, kube, warnings = fit_context(context, length, old)
    assert (tokens, kube) == expected
    assert len(warnings) == (context or "").isdigit() + (old is not None)


@pytest.mark.parametrize(
    ("context", "length", "old"),
    [("65536", 8192, None), ("gpu-prod", 4096, "gpu-dev"), ("0", None, None)],
)
def test_fit_context_refuses_what_reads_two_ways(
    context: str, length: int | None, old: str | None
) -> None:
    with pytest.raises(InvalidInput):
        fit_context(context, length, old)


@pytest.mark.parametrize(
    "command",
    [
        ("run",), ("plan",), ("status",), ("place",), ("fit",), ("ask",), ("approve",),
        ("deny",), ("mode", "status"), ("mode", "rotate"), ("mode", "resume"),
        ("policy", "explain"),
    ],
)  # fmt: skip
def test_every_command_that_talks_to_a_cluster_takes_kubeconfig_and_context(
    command: tuple[str, ...],
) -> None:
    code, out, _ = steward(*command, "--help")
    assert code == 0
    assert "--kubeconfig" in out and "--context " in out, out
