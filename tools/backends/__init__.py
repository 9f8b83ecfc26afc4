"""Backends: who carries actions out. `sim` is embedded; `kubernetes` drives a real cluster."""
