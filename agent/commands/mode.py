"""`steward mode …`."""

from __future__ import annotations

import typer

app = typer.Typer(help="mode commands.", no_args_is_help=True)
