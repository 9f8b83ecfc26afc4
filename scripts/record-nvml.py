"""Record NVML readings on a host with cards: idle, a matrix-product load, idle again.

Used on a GPU machine to refresh tests/fixtures/nvml/*.json:
    python3 scripts/record-nvml.py OUT.json
The load needs PyTorch with CUDA; without it, only idle readings are taken.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from pydantic import TypeAdapter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.metrics.nvml.readings import Snapshot, record

LOAD = textwrap.dedent(
    """
    import time, torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.time() + 6
    while time.time() < end:
        (a @ a).sum().item()
    """
)


def main(out: Path) -> None:
    taken = record(2.0, 0.5)
    load = subprocess.Popen([sys.executable, "-c", LOAD])
    taken += record(7.0, 0.5)
    load.wait()
    time.sleep(0.5)
    taken += record(2.0, 0.5)
    out.write_bytes(TypeAdapter(list[Snapshot]).dump_json(taken, indent=1))
    print(f"{len(taken)} readings -> {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
