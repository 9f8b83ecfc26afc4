"""The CLI's command groups, one module per area; agent/cli.py wires them into `steward`."""
