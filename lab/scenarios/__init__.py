"""Scenario files shipped with Steward (docs/scenarios.md): the homelab's faults and days.

A package only so that they travel with an installed Steward; their trace paths point into
lab/traces beside them.
"""

from pathlib import Path

SCENARIOS_DIR = Path(__file__).parent
