"""A real Prometheus server for the tests and `steward bench metrics`: the `prometheus` binary
(Debian's package; .ci/run installs it) started on loopback.

It scrapes the given targets every `interval` and keeps its data in the given directory, so a
test can kill it (SIGKILL, as a crash would) and start it again on the same port and data.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import yaml

BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"


class PrometheusMissing(RuntimeError):
    """No prometheus binary here."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealPrometheus:
    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        interval: str = "1s",
        port: int | None = None,
        *,
        jobs: list[dict[str, Any]] | None = None,
        storage: dict[str, Any] | None = None,
        flags: tuple[str, ...] = (),
        rules: tuple[Path, ...] = (),
    ) -> None:
        """`jobs` replaces the one job over `targets` with these scrape configs; `storage` is
        the configuration's `storage` section; `flags` go on the command line; `rules` are
        rule files to load (evaluated every `interval`)."""
        self.workdir = workdir
        self.port = port or free_port()
        self.config = workdir / "prometheus.yml"
        self.flags = flags
        config: dict[str, Any] = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "scrape_configs": jobs
            or [
                {
                    "job_name": "exporters",
                    "scrape_timeout": interval,
                    "static_configs": [{"targets": targets}],
                }
            ],
        }
        if storage:
            config["storage"] = storage
        if rules:
            config["rule_files"] = [str(path) for path in rules]
        self.config.write_text(yaml.safe_dump(config))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RealPrometheus:
        if not Path(BINARY).is_file():
            raise PrometheusMissing(
                f"no prometheus binary at {BINARY}: install it (apt-get install -y prometheus)"
            )
        log = (self.workdir / "prometheus.log").open("ab")
        self.proc = subprocess.Popen(
            [
                BINARY,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                *self.flags,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()[-2000:]}"
                )
            time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready within 30 s")

    def wait_for_rules(self, timeout_s: float = 30.0) -> None:
        """Wait until every loaded rule has been evaluated once, without error."""
        deadline = time.monotonic() + timeout_s
        while True:
            groups = httpx.get(f"{self.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
            rules = [rule for group in groups for rule in group["rules"]]
            bad = [r for r in rules if r.get("health") == "err"]
            if bad:
                raise RuntimeError(f"rule {bad[0]['name']} fails: {bad[0].get('lastError')}")
            if rules and all(r.get("health") == "ok" for r in rules):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the rules were not evaluated in time")
            time.sleep(0.2)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def wait_for_scrapes(self, count: int = 2, timeout_s: float = 20.0) -> None:
        """Wait until every target has been scraped up `count` times more than now."""

        def ups() -> float:
            r = httpx.get(
                f"{self.url}/api/v1/query",
                params={"query": "min(count_over_time(up[1h]))"},
                timeout=30,  # thousands of targets on a loaded machine: seconds
            )
            result = r.json()["data"]["result"]
            return float(result[0]["value"][1]) if result else 0.0

        start = ups()
        deadline = time.monotonic() + timeout_s
        while ups() < start + count:
            if time.monotonic() > deadline:
                raise TimeoutError("the targets were not scraped in time")
            time.sleep(0.2)

    def wait_until_up(self, targets: int, timeout_s: float = 120.0) -> None:
        """Wait until all `targets` answered their last scrape (`up` 1)."""

        def answered() -> tuple[float, float]:
            r = httpx.get(
                f"{self.url}/api/v1/query",
                params={"query": "count(up == 1) or vector(0)", "time": f"{time.time():.3f}"},
                timeout=5,
            )
            result = r.json()["data"]["result"]
            return float(result[0]["value"][1]) if result else 0.0, time.monotonic()

        deadline = time.monotonic() + timeout_s
        while True:
            count, now = answered()
            if count >= targets:
                return
            if now > deadline:
                raise TimeoutError(
                    f"{targets - count:.0f} of {targets} targets did not answer their scrape"
                )
            time.sleep(1.0)

    def __enter__(self) -> RealPrometheus:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()
