"""The report's plots (matplotlib, headless Agg): time lines, modes, and the Pareto plot.

Each function writes one PNG and returns its path. Controllers keep one colour in every plot.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # headless: no display, the same pixels on every machine
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from evals.bench.trace.tuning import CONTROLLERS, TARGET_ATTAINMENT, pareto

if TYPE_CHECKING:
    from evals.bench.trace.run import Result

TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
COLOURS = dict(zip(CONTROLLERS, TAB10, strict=True))
MODE_COLOURS = ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3")
DPI = 110


def _minutes(ts: list[float]) -> list[float]:
    return [t / 60 for t in ts]


def timelines(result: Result, where: Path) -> Path:
    """Demand, cards allocated and queue wait over time, one line per (tuned) controller."""
    fig, (ax_d, ax_c, ax_w) = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    first = next(iter(result.chosen.values()))
    ax_d.plot(_minutes(first.series.t), first.series.demand, color="black", lw=0.8)
    ax_d.set_ylabel("arrivals (req/s)")
    ax_d.set_title(f"{result.prep.setup.shape.name}: demand, cards and queue wait per controller")
    for name, o in result.chosen.items():
        colour = COLOURS.get(name)
        label = f"{name} ({o.knob})" if o.knob else name
        ax_c.step(_minutes(o.series.t), o.series.cards, where="post", color=colour, lw=1.2,
                  label=label)  # fmt: skip
        ax_w.plot(_minutes(o.series.t), o.series.wait_s, color=colour, lw=1.0, label=name)
    ax_c.set_ylabel("cards allocated")
    ax_c.legend(loc="upper left", fontsize=8, ncol=2)
    ax_w.set_ylabel("oldest queued request (s)")
    ax_w.axhline(result.prep.setup.slo_s, color="grey", ls="--", lw=0.8)
    ax_w.text(0, result.prep.setup.slo_s, " TTFT target", va="bottom", fontsize=8, color="grey")
    ax_w.set_yscale("symlog", linthresh=1.0)
    ax_w.set_ylim(bottom=0)
    ax_w.set_xlabel("minutes")
    for ax in (ax_d, ax_c, ax_w):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = where / "timeline.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def modes(result: Result, where: Path) -> Path:
    """The homelab GX10 pair's serving mode over time, one row per controller."""
    names = list(result.chosen)
    seen = sorted({m for o in result.chosen.values() for m in o.series.mode})
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(names) + 1.5))
    palette = {m: MODE_COLOURS[i % len(MODE_COLOURS)] for i, m in enumerate(seen)}
    for row, name in enumerate(names):
        s = result.chosen[name].series
        start = 0
        for i in range(1, len(s.mode) + 1):
            if i == len(s.mode) or s.mode[i] != s.mode[start]:
                left = s.t[start] / 60
                width = (s.t[i - 1] - s.t[start]) / 60 + 5 / 60
                ax.barh(row, width, left=left, color=palette[s.mode[start]], height=0.6)
                start = i
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("minutes")
    ax.set_title("GX10 pair's serving mode ('-': neither mode fully ready)")
    handles = [Patch(color=palette[m]) for m in seen]
    ax.legend(handles, seen, loc="upper right", fontsize=8)
    fig.tight_layout()
    path = where / "modes.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def pareto_plot(result: Result, where: Path) -> Path:
    """Attainment against GPU-hours for every run; the front joined, the tuned runs ringed."""
    fig, ax = plt.subplots(figsize=(9, 6))
    for name, outcomes in result.runs.items():
        xs = [o.figures.gpu_hours for o in outcomes]
        ys = [o.figures.slo_attainment * 100 for o in outcomes]
        ax.scatter(xs, ys, color=COLOURS.get(name), label=name, s=36, alpha=0.85)
        tuned = result.chosen[name].figures
        ax.scatter([tuned.gpu_hours], [tuned.slo_attainment * 100], facecolors="none",
                   edgecolors=COLOURS.get(name), s=160, lw=1.5)  # fmt: skip
    front = pareto(o for outcomes in result.runs.values() for o in outcomes)
    ax.plot([o.figures.gpu_hours for o in front], [o.figures.slo_attainment * 100 for o in front],
            color="black", lw=0.8, ls=":", label="Pareto front")  # fmt: skip
    ax.axhline(TARGET_ATTAINMENT * 100, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("GPU-hours of the driven pool(s)")
    ax.set_ylabel(f"SLO attainment (% of requests, TTFT <= {result.prep.setup.slo_s:g} s)")
    ax.set_title("Every grid run; rings: each controller at its tuned knob")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = where / "pareto.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
