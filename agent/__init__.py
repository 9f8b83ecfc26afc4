"""The agent: who decides, when, and who is told. The loop, the planners, the log, the CLI."""

__version__ = "0.1.0"
