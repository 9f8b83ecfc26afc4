"""What a deliberation's question says the rules would do, read back into actions.

A question put to the model (agent/loop/questions.py, agent/planners/llm/prompts.py) lists, under
`the_rules_would`, the rules' own actions as sentences ("scale burst-llm to 1 replica(s)",
"place a replica of burst-llm on render-1"). A scripted model that agrees with the rules (the
chaos bench's replicas, the obeying model of the injection tests) answers with these actions.
"""

from __future__ import annotations

import json
import re
from typing import Any

RULES_WOULD = re.compile(r'"the_rules_would":\s*(\[[^\]]*\])')
SCALE = re.compile(r"scale (\S+) to (\d+) replica\(s\)")
PLACE = re.compile(r"place a replica of (\S+) on (\S+)")


def rules_would(text: str) -> list[dict[str, Any]]:
    """The scales and placements a question in `text` says the rules would take (anything else
    is left out, as a model unsure of it would)."""
    actions: list[dict[str, Any]] = []
    for listed in RULES_WOULD.findall(text):
        try:
            lines = json.loads(listed)
        except ValueError:
            continue
        for line in lines if isinstance(lines, list) else ():
            if m := SCALE.fullmatch(str(line)):
                actions.append({"type": "scale_workload", "workload": m[1], "replicas": int(m[2])})
            elif m := PLACE.fullmatch(str(line)):
                actions.append({"type": "place_replica", "workload": m[1], "node": m[2]})
    return actions
