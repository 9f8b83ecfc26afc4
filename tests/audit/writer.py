"""A real writer process for the crash and concurrency tests.

python -m tests.audit.writer DATA_DIR intent   a finished decision, then one intent; prints
                                               `durable ID` once that intent is on disk and
                                               waits to be killed (between intent and outcome)
python -m tests.audit.writer DATA_DIR burst    intent/outcome pairs until killed, printing
                                               each seq once it is durable
python -m tests.audit.writer DATA_DIR hold     takes the writer's place, prints `holding`, waits
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from agent.audit import AuditLog, Startup
from tests.audit.builders import intent, outcome


def main(data_dir: Path, mode: str) -> None:
    with AuditLog.open(data_dir) as log:
        log.append(Startup(pid=os.getpid(), host="test", version="0.1.0"))
        if mode == "intent":
            log.write_intent(intent("d-0"))
            log.write_outcome(outcome("d-0"))
            log.write_intent(intent("d-crashed"))
            print("durable d-crashed", flush=True)
        elif mode == "burst":
            n = 0
            while True:
                n += 1
                print(log.write_intent(intent(f"d-{n}")).seq, flush=True)
                print(log.write_outcome(outcome(f"d-{n}")).seq, flush=True)
        elif mode == "hold":
            print("holding", flush=True)
        else:
            raise SystemExit(f"unknown mode {mode!r}: use intent, burst or hold")
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
