"""What every command shares: the --json and --data-dir options, exit codes, output helpers.

Conventions (a contract for scripts): `--json` prints one JSON document on stdout and nothing
else there; `--data-dir DIR` is where state lives (the log, checkpoints, the simulated cluster);
exit 0 ok, 1 a check failed, 2 bad input.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, ParamSpec

import typer
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python
from rich.console import Console

from agent.daemon.config import CONFIG_ENV, StewardConfig, load_config
from agent.support.datadir import check_data_dir
from tools.errors import InvalidInput

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2

DEFAULT_DATA_DIR = Path(".steward")

BackendOpt = Annotated[
    str | None,
    typer.Option("--backend", help="sim (the embedded simulated cluster) or kubernetes."),
]
ResetOpt = Annotated[
    bool,
    typer.Option(
        "--reset",
        help="Archive the data dir's log and state under archive/ (kept readable) and start over.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
PolicyOpt = Annotated[
    Path | None,
    typer.Option(
        "--policy", help="Policy file (default: the last run's, else the default).", dir_okay=False
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where state lives: the decision log, checkpoints, the simulated cluster. "
        "Default: $STEWARD_DATA_DIR, steward.yaml's data_dir, or ./.steward.",
        file_okay=False,
    ),
]

_cluster: dict[str, Any] = {}
"""`--kubeconfig` / `--context` of the command being run, laid over steward.yaml by config()."""


def _take_kubeconfig(value: Path | None) -> Path | None:
    if value is not None:
        _cluster["kubeconfig"] = value
    return value


def _take_context(value: str | None) -> str | None:
    if value is not None:
        _cluster["context"] = value
    return value


KubeconfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="The cluster's kubeconfig, as kubectl's (implies --backend kubernetes). "
        "Default: kubernetes.kubeconfig, $KUBECONFIG, ~/.kube/config.",
        exists=True,
        dir_okay=False,
        callback=_take_kubeconfig,
    ),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="The kubeconfig's context to use, as kubectl's (implies --backend kubernetes). "
        "Default: kubernetes.context, else the current one.",
        callback=_take_context,
    ),
]


def use_context(name: str) -> None:
    """A kubeconfig context that a command resolved from its own flags (`steward fit`, whose
    --context once meant tokens), laid over steward.yaml by config() as `--context` is."""
    _take_context(name)


def cluster_flags() -> list[str]:
    """The cluster flags given to the command being run (`--kubeconfig`, `--context`)."""
    return [f"--{'kubeconfig' if key == 'kubeconfig' else 'context'}" for key in _cluster]


UNWRAPPED = 100_000
"""The width of output that goes to a pipe or a file: no line is cut to fit a terminal that is
not there (set COLUMNS to choose a width)."""


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=UNWRAPPED if piped else None, soft_wrap=piped)


console = _console()
err_console = _console(stderr=True)


def config() -> StewardConfig:
    """The effective configuration: `--config FILE` (any command) or $STEWARD_CONFIG, with the
    STEWARD_* environment laid over it, and the command's `--kubeconfig` / `--context` over
    both; exit 2 naming each problem when it cannot be used."""
    try:
        loaded = load_config()
    except InvalidInput as exc:
        fail(str(exc))
    warn_unknown(loaded)
    if not _cluster:
        return loaded
    # --kubeconfig / --context name a cluster: the kubernetes backend talks to it.
    flags = {f"kubernetes.{key}": (f"--{key}", value) for key, value in _cluster.items()}
    return with_flags(loaded, {**flags, "backend": (cluster_flags()[0], "kubernetes")})


def with_flags(settings: StewardConfig, flags: dict[str, tuple[str, Any]]) -> StewardConfig:
    """`settings` with the command's flags over it, each recorded as the source of its key
    (`steward config show`, the run's `configuration` log line): dotted key -> (flag, value),
    None: not given. Exit 2 naming the flag when its value cannot be used."""
    try:
        return settings.with_flags(flags)
    except InvalidInput as exc:
        fail(str(exc))


def new_command() -> None:
    """Forget the cluster flags of a command run before in this process (tests run many)."""
    _cluster.clear()


def with_backend(backend: str | None) -> StewardConfig:
    """config() with the command's `--backend` over it; exit 2 when the flags contradict each
    other (`--backend sim` with `--kubeconfig` / `--context`, which name a real cluster)."""
    settings = config()
    if backend is None:
        return settings
    if backend not in ("sim", "kubernetes"):
        fail(f"--backend {backend!r}: choose sim or kubernetes")
    if backend == "sim" and _cluster:
        given = " and ".join(cluster_flags())
        fail(f"--backend sim and {given} ask for two different clusters: drop one of them")
    return with_flags(settings, {"backend": ("--backend", backend)})


_warned: set[str] = set()


def warn_unknown(loaded: StewardConfig) -> None:
    """Say once per process, on stderr, which STEWARD_* variables set nothing."""
    for warning in loaded.warnings:
        if warning not in _warned:
            _warned.add(warning)
            warn(warning)


def warn(message: str) -> None:
    """One warning on stderr (stdout stays the command's output, one JSON document with --json)."""
    err_console.print(f"[yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True)


def data_dir(option: Path | None) -> Path:
    """The data dir chosen by the option, $STEWARD_DATA_DIR, steward.yaml or the default
    (./.steward); created if absent."""
    path = option or (config().data_dir if _configured() else DEFAULT_DATA_DIR)
    try:
        check_data_dir(path)
    except InvalidInput as exc:
        fail(str(exc))
    if path.exists() and not path.is_dir():
        fail(f"data dir {path} is a file, not a directory; point --data-dir (or STEWARD_DATA_DIR) "
             "at a directory")  # fmt: skip
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"data dir {path} cannot be created: {exc.strerror}; choose another --data-dir")
    if not os.access(path, os.W_OK):
        fail(f"data dir {path} is not writable by this user; choose another --data-dir")
    return path


def readable_data_dir(option: Path | None) -> Path:
    """The data dir as `data_dir` chooses it, for a command that only reads (a copy of a log on
    read-only storage will do): never created, never required to be writable."""
    path = option or (config().data_dir if _configured() else DEFAULT_DATA_DIR)
    if not path.is_dir():
        fail(f"data dir {path} is not a directory; pass the --data-dir the agent runs with")
    try:
        check_data_dir(path)
    except InvalidInput as exc:
        fail(str(exc))
    return path


def decision_id_arg(value: str) -> str:
    """A decision id as given on the command line: printable, short, no path or control
    characters (ids look like d-1a2b3c4d5e6f); exit 2 naming it otherwise."""
    shown = value.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    if not value or len(value) > 64 or not all(c.isascii() and c.isprintable() for c in value):
        fail(f"{shown[:80]!r} is not a decision id (ids look like d-1a2b3c4d5e6f; "
             "`steward pending` and `steward audit show` list them)")  # fmt: skip
    return value


P = ParamSpec("P")


def names_a_cluster(command: Callable[P, None]) -> Callable[P, None]:
    """Give a command `--kubeconfig` and `--context`, after its own options. Their callbacks lay
    them over steward.yaml for config(); the command never reads them, so they are declared here
    once rather than as two unused parameters of every command that opens the backend."""
    own = inspect.signature(command, eval_str=True)
    cluster = [
        inspect.Parameter(
            "kubeconfig", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=KubeconfigOpt
        ),
        inspect.Parameter(
            "kube_context", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ContextOpt
        ),
    ]

    @functools.wraps(command)
    def with_cluster(*args: P.args, **kwargs: P.kwargs) -> None:
        kwargs.pop("kubeconfig", None)
        kwargs.pop("kube_context", None)
        command(*args, **kwargs)

    with_cluster.__signature__ = own.replace(  # type: ignore[attr-defined]  # read by typer
        parameters=[*own.parameters.values(), *cluster]
    )
    return with_cluster


def _configured() -> bool:
    return bool(os.environ.get(CONFIG_ENV) or os.environ.get("STEWARD_DATA_DIR"))


def emit_json(obj: Any) -> None:
    """Write one JSON document to stdout."""
    if isinstance(obj, BaseModel):
        text = obj.model_dump_json(indent=2)
    else:
        text = json.dumps(obj, indent=2, default=_default, sort_keys=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _default(obj: Any) -> Any:
    """Anything pydantic can dump (models, their dataclasses such as a `Metric`, times, paths)."""
    try:
        return to_jsonable_python(obj)
    except PydanticSerializationError:
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}") from None


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print an error on stderr and exit with `code` (2, bad input, by default)."""
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def reset_data_dir(where: Path) -> None:
    """`--reset`: archive everything in the data dir (the daemon's lock is taken while it does,
    so a running agent's data dir is never pulled from under it)."""
    from agent.daemon.compose import archive
    from agent.support.datadir import locked

    try:
        with locked(where):
            moved = archive(where)
    except InvalidInput as exc:
        fail(str(exc))
    if moved is not None:
        err_console.print(f"archived the old log and state to {moved}", highlight=False)
