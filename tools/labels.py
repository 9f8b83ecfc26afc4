"""Label selectors: whether a node (or anything labelled) matches a node selector.

Kubernetes' `nodeSelector` semantics: every key of the selector must be a label of the object
with the same value; an empty selector matches everything. The planners, the placement model,
the simulator and the benchmarks all ask this one function.
"""

from __future__ import annotations

from collections.abc import Mapping


def matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """Whether `labels` hold every pair of `selector` (an empty selector matches everything)."""
    return all(labels.get(key) == value for key, value in selector.items())


def unmatched(labels: Mapping[str, str], selector: Mapping[str, str]) -> dict[str, str]:
    """The pairs of `selector` that `labels` lack (empty when they match), to say why not."""
    return {key: value for key, value in selector.items() if labels.get(key) != value}
