"""`steward policy …`."""

from __future__ import annotations

import typer

app = typer.Typer(help="policy commands.", no_args_is_help=True)
