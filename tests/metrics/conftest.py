"""Fixtures of the metrics tests: the known cluster served by exporters, a real Prometheus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.bench.prometheus_server import RealPrometheus
from tests.metrics.cluster import Exporters, truth


@pytest.fixture(scope="module")
def exporters() -> Iterator[Exporters]:
    with Exporters(truth()) as running:
        yield running


@pytest.fixture(scope="module")
def prometheus(
    exporters: Exporters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealPrometheus]:
    workdir: Path = tmp_path_factory.mktemp("prometheus")
    with RealPrometheus(workdir, exporters.targets) as server:
        server.wait_for_scrapes(7)  # more than the 5 s rate window
        yield server
