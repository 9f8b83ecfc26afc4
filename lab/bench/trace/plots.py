"""The report's plots (matplotlib, headless Agg): attainment against GPU-hours, and time lines.

Each function writes one PNG and returns its path. Controllers keep one colour in every plot;
legends sit outside the axes, so no legend hides data, and each controller's time line is its own
figure, so no controller's line hides another's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # headless: no display, the same pixels on every machine
import matplotlib.pyplot as plt

from lab.bench.trace.tuning import CONTROLLERS, TARGET_ATTAINMENT

if TYPE_CHECKING:
    from lab.bench.trace.replay import Outcome, Series
    from lab.bench.trace.run import Result

TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
COLOURS = dict(zip(CONTROLLERS, TAB10, strict=True))
BOUND_COLOUR = "#222222"
DPI = 110


def attainment(result: Result, where: Path) -> Path:
    """Mean SLO attainment against mean GPU-hours, each with its 95 % interval; the bound."""
    figures = result.figures()
    controllers = figures["controllers"]
    bound = figures["bound"]
    assert isinstance(controllers, dict) and isinstance(bound, dict)
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for name, f in [*controllers.items(), ("bound", bound)]:
        x, y = f["gpu_hours"], f["slo_attainment"] * 100
        (xl, xh), (yl, yh) = f["gpu_hours_ci"], f["slo_attainment_ci"]
        colour = BOUND_COLOUR if name == "bound" else COLOURS.get(name)
        ax.errorbar(
            [x], [y], xerr=[[x - xl], [xh - x]], yerr=[[y - yl * 100], [yh * 100 - y]],
            fmt="*" if name == "bound" else "o", ms=12 if name == "bound" else 8,
            color=colour, capsize=4, lw=1.2, label=name,
        )  # fmt: skip
    ax.axhline(TARGET_ATTAINMENT * 100, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("GPU-hours of the driven pools over the scored window (mean over seeds)")
    ax.set_ylabel("SLO attainment, % of requests (TTFT and ITL)")
    setup = result.tests[0].setup
    ax.set_title(
        f"{setup.shape.name}: {len(result.tests)} test seeds, 95 % intervals; "
        f"dashed: the {TARGET_ATTAINMENT:.0%} target"
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.tight_layout()
    path = where / "attainment.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _minutes(ts: list[float]) -> list[float]:
    return [t / 60 for t in ts]


def timeline(result: Result, name: str, outcome: Outcome, where: Path) -> Path:
    """One controller on the first test seed: offered load, cards, TTFT and ITL per minute."""
    s: Series = outcome.series
    b: Series = result.bounds[0].outcome.series
    setup = result.tests[0].setup
    colour = COLOURS.get(name, BOUND_COLOUR)
    fig, axes = plt.subplots(4, 1, figsize=(11, 9.5), sharex=True)
    ax_l, ax_c, ax_t, ax_i = axes
    ax_l.plot(_minutes(s.t), s.demand, color="black", lw=0.8, label="offered (req/s)")
    ax_l.set_ylabel("arrivals (req/s)")
    ax_c.step(_minutes(s.t), s.cards, where="post", color=colour, lw=1.4, label=f"{name}: held")
    ax_c.step(_minutes(b.t), b.cards, where="post", color=BOUND_COLOUR, lw=1.0, ls="--",
              label="bound: held")  # fmt: skip
    ax_c.step(_minutes(s.t), s.ready, where="post", color=colour, lw=0.8, ls=":",
              label=f"{name}: replicas ready")  # fmt: skip
    ax_c.set_ylabel("cards / replicas")
    ttft = [(m / 60, v) for m, v in zip(s.minute, s.ttft_p90_s, strict=True) if v is not None]
    itl = [(m / 60, v) for m, v in zip(s.minute, s.itl_p90_s, strict=True) if v is not None]
    ax_t.plot([m for m, _ in ttft], [v for _, v in ttft], "o-", ms=3, color=colour,
              label="p90 TTFT of the minute's arrivals")  # fmt: skip
    ax_t.axhline(setup.slo_ttft_s, color="grey", ls="--", lw=0.8, label="TTFT target")
    ax_t.set_yscale("symlog", linthresh=1.0)
    ax_t.set_ylabel("TTFT (s)")
    ax_i.plot([m for m, _ in itl], [v * 1000 for _, v in itl], "o-", ms=3, color=colour,
              label="p90 mean ITL of the minute's arrivals")  # fmt: skip
    ax_i.axhline(setup.slo_itl_s * 1000, color="grey", ls="--", lw=0.8, label="ITL target")
    ax_i.set_ylabel("ITL (ms)")
    ax_i.set_xlabel("minutes (shaded: the tail, arrivals go on, nothing scored)")
    for ax in axes:
        ax.axvspan(setup.duration_s / 60, s.t[-1] / 60 if s.t else 0, color="grey", alpha=0.12)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax_l.set_title(f"{setup.shape.name}, seed {setup.seed}: {name} ({outcome.knob or 'policy'})")
    fig.tight_layout()
    path = where / f"timeline-{name}.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
