"""The Markdown report of `steward bench trace --report DIR`, with its plots.

It states the setup (load, splits, seeds, targets), every controller's figures over the test
seeds with their intervals and their ratio to the certified bound, where Steward stands (said
from the numbers, never adjusted to them), the training runs that chose each knob, and the plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lab.bench.trace import plots
from lab.bench.trace.tuning import TARGET_ATTAINMENT

if TYPE_CHECKING:
    from lab.bench.trace.run import Result


def _pct(x: object) -> str:
    return "-" if not isinstance(x, float | int) else f"{x * 100:.2f}"


def _num(x: object, digits: int = 3) -> str:
    return "-" if not isinstance(x, float | int) else f"{x:.{digits}f}"


def table(figures: dict[str, object]) -> list[str]:
    """The summary table of a result's JSON (also what docs/benchmarks.md shows)."""
    controllers = figures["controllers"]
    bound = figures["bound"]
    assert isinstance(controllers, dict) and isinstance(bound, dict)
    rows = [
        "| controller | SLO % (95 % CI) | TTFT % | ITL % | GPU-h (95 % CI) | x bound "
        "| actions | reversals | seeds at 99 % | knob (chosen on training) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in [*controllers.items(), ("**bound**", bound)]:
        lo, hi = f["slo_attainment_ci"]
        glo, ghi = f["gpu_hours_ci"]
        rows.append(
            f"| {name} | {_pct(f['slo_attainment'])} ({_pct(lo)}-{_pct(hi)}) "
            f"| {_pct(f['ttft_attainment'])} | {_pct(f['itl_attainment'])} "
            f"| {_num(f['gpu_hours'])} ({_num(glo)}-{_num(ghi)}) | {_num(f['ratio_to_bound'])} "
            f"| {_num(f['scaling_actions'], 1)} | {_num(f['reversals'], 1)} "
            f"| {f['meets_target_seeds']}/{f['seeds']} | {f['knob'] or '(policy, untuned)'} |"
        )
    return rows


def standing(figures: dict[str, object]) -> list[str]:
    """Where Steward stands, said from the figures."""
    controllers = figures["controllers"]
    assert isinstance(controllers, dict)
    s = controllers.get("steward")
    if s is None:
        return ["- Steward was not among the controllers."]
    at = s["slo_attainment"] >= TARGET_ATTAINMENT
    out = [
        f"- Steward: {_pct(s['slo_attainment'])} % attainment "
        f"({'reaches' if at else 'does NOT reach'} {TARGET_ATTAINMENT:.0%}), "
        f"{_num(s['gpu_hours'])} GPU-h, x{_num(s['ratio_to_bound'])} the bound."
    ]
    meeting = {
        n: f for n, f in controllers.items()
        if n != "steward" and f["slo_attainment"] >= TARGET_ATTAINMENT
    }  # fmt: skip
    if meeting:
        best = min(meeting, key=lambda n: meeting[n]["gpu_hours"])
        saving = 1 - s["gpu_hours"] / meeting[best]["gpu_hours"]
        word = f"{saving:.1%} fewer" if saving >= 0 else f"{-saving:.1%} more"
        out.append(
            f"- The cheapest baseline at the target is {best} ({_num(meeting[best]['gpu_hours'])} "
            f"GPU-h): Steward uses {word} GPU-hours"
            + ("." if at else ", without reaching the target itself.")
        )
    else:
        out.append("- No baseline reaches the target on average over the seeds.")
    bound = figures["bound"]
    assert isinstance(bound, dict)
    for b in bound["beaten_by"]:  # the certificate check, seed by seed
        out.append(
            f"- The bound is beaten: {b['controller']} reaches the target on seed {b['seed']} "
            f"with {_num(b['gpu_hours'])} GPU-h, below the bound's "
            f"{_num(b['bound_gpu_hours'])}: here its search missed a cheaper schedule."
        )
    if not bound["beaten_by"]:
        out.append(
            "- The bound holds: no controller reaches the target on any seed with fewer "
            "GPU-hours than the bound of that seed."
        )
    return out


def write(result: Result, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    figures = result.figures()
    setup = figures["setup"]
    assert isinstance(setup, dict)
    images = [plots.attainment(result, where)]
    images += [plots.timeline(result, n, outs[0], where) for n, outs in result.runs.items()]
    train = setup["train"]
    lines = [
        f"# Trace replay: {setup['trace']} on {setup['profile']}",
        "",
        f"- scored window {setup['duration_h']:g} h (arrivals go on 5 min after it, unscored); "
        f"targets: TTFT <= {setup['slo_ttft_s']:g} s and mean ITL <= {setup['slo_itl_s']:g} s",
        f"- test seeds {setup['test_seeds']}; training split: {train['trace']} from "
        f"{train['offset_s']:g} s, seed {train['seed']} (rate scale and knobs fixed there)",
        f"- rate scale {setup['rate_scale']}; commit {setup.get('commit', '?')}",
        "",
        f"## Figures over {len(result.tests)} test seeds",
        "",
        *table(figures),
        "",
        "## Where Steward stands",
        "",
        *standing(figures),
        "",
        "## Plots",
        "",
        *[f"![{p.stem}]({p.name})" for p in images],
        "",
        "## Training runs (the knob chosen: fewest GPU-hours at 99 %, else best attainment)",
        "",
        "| controller | knob | SLO % | GPU-h |",
        "| --- | --- | --- | --- |",
        *[
            f"| {n} | {o.knob} | {_pct(o.figures.slo_attainment)} | {_num(o.figures.gpu_hours)} |"
            for n, t in result.tuned.items()
            for o in t.runs
        ],
        "",
    ]
    path = where / "report.md"
    path.write_text("\n".join(lines))
    return path
