"""`steward` top-level commands of this area; `register` adds them to the root app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to the root app."""
