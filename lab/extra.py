"""Whether the lab's own dependencies are installed: the extra `gpu-steward[lab]`.

The lab ships in the same wheel as the product (the embedded simulated cluster of `steward run`
needs nothing beyond the product's dependencies), but its commands — `steward twin`, `bench`,
`eval` — need what only the extra brings (the twin's aiohttp server, matplotlib's plots, the
token counter). A plain `pip install .` gets the commands; run without the extra, each says in
one line how to install it and exits 2, instead of failing somewhere inside with a traceback.
The extra's list is read from the installed distribution's metadata: pyproject.toml is the one
place it is written.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution, requires

import typer

DISTRIBUTION = "gpu-steward"
INSTALL = f"pip install '{DISTRIBUTION}[lab]'"
_EXTRA = re.compile(r"""extra\s*==\s*["']lab["']""")


def missing_lab_dependencies() -> list[str]:
    """The requirements of the `lab` extra not installed (none when Steward runs from a source
    tree that is not installed: there is no metadata to read, and the imports speak for
    themselves)."""
    try:
        declared = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return []
    missing: list[str] = []
    for requirement in declared:
        if not _EXTRA.search(requirement):
            continue
        name = re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]
        try:
            distribution(name)
        except PackageNotFoundError:
            missing.append(name)
    return missing


def require_lab(command: str) -> None:
    """Exit 2 with how to install the lab when `steward COMMAND` cannot run without it."""
    missing = missing_lab_dependencies()
    if missing:
        typer.echo(
            f"error: steward {command} is part of the lab, whose dependencies are not installed "
            f"({', '.join(missing)}): {INSTALL}",
            err=True,
        )
        raise typer.Exit(2)
