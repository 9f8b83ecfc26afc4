"""The Markdown report of `steward bench trace --report DIR`, with its plots.

It states the setup, the tuned figures of every controller, the issue's margins checked against
them (each line says met or not met, with the numbers — never adjusted to the result), every grid
run, and the Pareto set.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evals.bench.trace import plots
from evals.bench.trace.figures import Figures
from evals.bench.trace.tuning import TARGET_ATTAINMENT, pareto

if TYPE_CHECKING:
    from evals.bench.trace.replay import Outcome
    from evals.bench.trace.run import Result

COLUMNS = (
    "slo_attainment", "ttft_p50_s", "ttft_p99_s", "queue_wait_p99_s", "gpu_hours",
    "idle_gpu_hours", "energy_kwh", "scaling_actions", "reversals", "dropped", "aborted",
    "rejected", "from_zero_wait_p99_s", "median_ms", "p99_ms",
)  # fmt: skip


def write(result: Result, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    images = [plots.timelines(result, where), plots.pareto_plot(result, where)]
    if result.prep.setup.fleet is None:
        images.insert(1, plots.modes(result, where))
    setup = result.prep.setup
    profile = "homelab" if setup.fleet is None else f"fleet {setup.fleet[0]}x{setup.fleet[1]}"
    scales = ", ".join(f"{p} x{s:g}" for p, s in result.prep.rate_scale.items())
    lines = [
        f"# Trace replay: {setup.shape.name} on the {profile}",
        "",
        f"- duration {setup.duration_s / 3600:g} h (+5 min tail without arrivals), seed "
        f"{setup.seed}, TTFT target {setup.slo_s:g} s, rate scale {scales}",
        f"- driven workloads: {', '.join(t.name for t in result.prep.targets)}",
        "- each baseline at the knob value with the fewest GPU-hours among those reaching "
        f"{TARGET_ATTAINMENT:.0%} attainment (else its best attainment); Steward untuned",
        "",
        "## Tuned figures",
        "",
        _table([(n, o) for n, o in result.chosen.items()]),
        "",
        "## The issue's margins",
        "",
        *_margins(result),
        "",
        "## Plots",
        "",
        *[f"![{p.stem}]({p.name})" for p in images],
        "",
        "## Every grid run",
        "",
        _table([(n, o) for n, runs in result.runs.items() for o in runs]),
        "",
        "## Pareto set (attainment vs GPU-hours, over every run)",
        "",
        *[
            f"- {o.controller} {o.knob}: {o.figures.slo_attainment:.2%} at "
            f"{o.figures.gpu_hours:.3f} GPU-h"
            for o in pareto(o for runs in result.runs.values() for o in runs)
        ],
        "",
    ]
    path = where / "report.md"
    path.write_text("\n".join(lines))
    return path


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(rows: list[tuple[str, Outcome]]) -> str:
    head = "| controller | knob | " + " | ".join(COLUMNS) + " |"
    rule = "|" + " --- |" * (len(COLUMNS) + 2)
    body = [
        f"| {name} | {o.knob or '(policy)'} | "
        + " | ".join(_cell(getattr(o.figures, c)) for c in COLUMNS)
        + " |"
        for name, o in rows
    ]
    return "\n".join([head, rule, *body])


def _fewer(s: Figures, other: Figures, field: str, margin: float, what: str) -> str:
    a, b = getattr(s, field), getattr(other, field)
    if b <= 0:
        return f"- {what}: the baseline's {field} is 0 — not comparable"
    saving = 1 - a / b
    verdict = "met" if saving >= margin else "NOT met"
    said = f"{saving:.1%} fewer" if saving >= 0 else f"{-saving:.1%} more"
    return f"- {what}: {said} ({a:.4g} vs {b:.4g}; wanted >= {margin:.0%} fewer): {verdict}"


def _margins(result: Result) -> list[str]:
    chosen = {n: o.figures for n, o in result.chosen.items()}
    s = chosen.get("steward")
    if s is None:
        return ["- Steward was not among the controllers: no margins to check"]
    out = []
    at_slo = s.slo_attainment >= TARGET_ATTAINMENT
    out.append(
        f"- Steward's attainment {s.slo_attainment:.2%} "
        + ("reaches" if at_slo else "does NOT reach")
        + f" {TARGET_ATTAINMENT:.0%}"
        + ("" if at_slo else ": the GPU-hour comparisons below are not at equal SLO")
    )
    for name, margin in (("keda", 0.2), ("hpa", 0.2), ("dynamo", 0.1)):
        if name in chosen:
            out.append(_fewer(s, chosen[name], "gpu_hours", margin, f"GPU-hours vs {name}"))
    if "oracle" in chosen and chosen["oracle"].gpu_hours > 0:
        ratio = s.gpu_hours / chosen["oracle"].gpu_hours
        verdict = "met" if ratio <= 1.15 else "NOT met"
        out.append(f"- GPU-hours vs the oracle: x{ratio:.3f} (wanted <= x1.15): {verdict}")
    if "hpa" in chosen:
        out.append(_fewer(s, chosen["hpa"], "scaling_actions", 0.33, "scaling actions vs hpa"))
    if "static" in chosen:
        out.append(_fewer(s, chosen["static"], "energy_kwh", 0.2, "energy vs static"))
    if s.from_zero_wait_p99_s is not None:
        out.append(f"- from zero: p99 wait {s.from_zero_wait_p99_s:.1f} s, {s.dropped} dropped")
    if "dynamo" in chosen and result.prep.setup.shape.name == "sinusoid":
        slo = result.prep.setup.slo_s
        d = chosen["dynamo"]
        out.append(
            f"- sinusoid: TTFT p99 Steward {_cell(s.ttft_p99_s)} s, Dynamo-style "
            f"{_cell(d.ttft_p99_s)} s against {slo:g} s: "
            + ("met" if (s.ttft_p99_s or 1e9) <= slo < (d.ttft_p99_s or 1e9) else "NOT met")
        )
    return out
