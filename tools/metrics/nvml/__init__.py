"""The cards of the host Steward runs on, read through NVML: the readings and the metric source.

`source_from_config` is the composition root's entry (`metrics.sources: [nvml]`): this host's
cards (tools.metrics.nvml.source.NvmlSource), matched to the node of the same name.
"""

from __future__ import annotations

from tools.metrics.nvml.source import NvmlSource

__all__ = ["NvmlSource", "source_from_config"]


def source_from_config(metrics: object) -> NvmlSource:
    """This host's cards as a metric source (the `metrics:` section holds nothing for NVML)."""
    return NvmlSource()
