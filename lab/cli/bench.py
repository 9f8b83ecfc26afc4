"""`steward bench …`: timed figures for the speed and memory targets.

Each benchmark of the lab registers itself on `app` (`steward bench sim`, `policy`, `audit`,
…). All print `median_ms` and `p99_ms` (and more) with --json; `loop`, `policy` and `place` time
fresh observations (parsed from JSON, `--churn` of the nodes changed each time) and say their
`churn`.
Targets are checked here, by benchmarks, never by timed unit tests.
"""

from __future__ import annotations

import math
import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from lab.extra import require_lab

app = typer.Typer(help="Benchmarks: print timing figures (median_ms, p99_ms) for a target.")


@app.callback()
def _needs_the_lab() -> None:
    require_lab("bench")


def register(root: typer.Typer) -> None:
    """Add `steward bench` and every benchmark to the root app: the entry point
    `steward.commands: bench`, which the product loads (agent/cli/plugins.py)."""
    # Each module registers its own benchmark on `app`.
    import lab.bench.audit
    import lab.bench.llm_prompt
    import lab.bench.metrics
    import lab.bench.place
    import lab.bench.policy
    import lab.bench.rotate
    import lab.bench.sim
    import lab.cli.bench_loop  # noqa: F401

    root.add_typer(app, name="bench")


ChurnOpt = Annotated[
    float,
    typer.Option(
        "--churn",
        min=0.0,
        max=1.0,
        help="Share of the nodes that change from one observation to the next (every "
        "observation is parsed afresh from JSON, as a real backend builds it).",
    ),
]


class Figures(BaseModel):
    """Timing figures of one benchmark, in milliseconds."""

    name: str
    runs: int
    median_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    peak_rss_mb: float


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def measure(
    name: str,
    fn: Callable[[], object],
    runs: int,
    warmup: int = 3,
    setup: Callable[[], object] | None = None,
    *,
    cpu_ms: list[float] | None = None,
) -> Figures:
    """Time `fn` `runs` times after `warmup` untimed calls (garbage collection included).

    `setup`, when given, runs untimed before every call (e.g. letting simulated time pass).
    `cpu_ms`, when given, gets each timed call's CPU time (all the process's threads): on a
    shared machine, what the call itself cost apart from waiting for a core or a disk.
    """
    progress = RunProgress(name, warmup + runs)
    try:
        for _ in range(warmup):
            if setup is not None:
                setup()
            fn()
            progress.step()
        samples: list[float] = []
        for _ in range(runs):
            if setup is not None:
                setup()
            start, cpu = time.perf_counter(), time.process_time()
            fn()
            samples.append((time.perf_counter() - start) * 1000)
            if cpu_ms is not None:
                cpu_ms.append((time.process_time() - cpu) * 1000)
            progress.step()
    finally:
        progress.done()
    return figures(name, samples)


class RunProgress:
    """`bench NAME: run 12/40` on a terminal's stderr while a benchmark runs; nothing when stderr
    is not a terminal or the command prints JSON (`--json`). It redraws twice a second, outside
    the timed calls, so the figures pay for no more than a counter."""

    def __init__(self, name: str, total: int) -> None:
        from agent.cli.common import err_console

        self.name, self.total, self.count = name, total, 0
        shown = err_console.is_terminal and "--json" not in sys.argv[1:]
        self._status = (
            err_console.status(f"bench {name}: run 0/{total}", refresh_per_second=2)
            if shown
            else None
        )
        if self._status is not None:
            self._status.start()

    def step(self) -> None:
        self.count += 1
        if self._status is not None:
            self._status.update(f"bench {self.name}: run {self.count}/{self.total}")

    def done(self) -> None:
        if self._status is not None:
            self._status.stop()


def figures(name: str, samples_ms: Sequence[float]) -> Figures:
    """The figures of timings taken elsewhere (at least one), in milliseconds."""
    ordered = sorted(samples_ms)
    p99_index = min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))
    return Figures(
        name=name,
        runs=len(ordered),
        median_ms=round(statistics.median(ordered), 4),
        p99_ms=round(ordered[p99_index], 4),
        mean_ms=round(statistics.fmean(ordered), 4),
        min_ms=round(ordered[0], 4),
        max_ms=round(ordered[-1], 4),
        peak_rss_mb=round(peak_rss_mb(), 1),
    )


@app.command("chaos")
def chaos(
    minutes: Annotated[
        float, typer.Option("--minutes", min=0.1, max=24 * 60, help="How long to soak.")
    ] = 10.0,
    seed: Annotated[int, typer.Option("--seed", help="Seeds every kill, fault and answer.")] = 0,
    api_faults: Annotated[
        float | None,
        typer.Option(
            "--api-faults",
            min=0.0,
            max=1.0,
            help="Also run two replicas against the twin with this share of API requests "
            "failing, and report who led and who called the model (`leadership`).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """The agent as a real process under kill -9, API faults, bad LLM answers, outages and node
    losses; then the invariants. Exit 1 when any is violated."""
    if not math.isfinite(minutes):
        raise typer.BadParameter(f"--minutes {minutes} is not a finite number")
    from lab.bench.chaos import report_text, run_chaos  # the subprocesses and the server

    report = run_chaos(minutes, seed, api_faults=api_faults)
    if json_out:
        print(report.model_dump_json(indent=2))
    else:
        print(report_text(report))
    if report.violations:
        raise typer.Exit(1)


@app.command("trace")
def trace(  # noqa: PLR0917 - typer maps each option to a parameter
    trace_name: Annotated[
        str,
        typer.Option(
            "--trace",
            help="azure-conv, azure-code, servegen[:SERVICE[:DAY]], sinusoid, random-sinusoid, "
            "flash, or a CSV (TIMESTAMP,ContextTokens,GeneratedTokens requests; "
            "TIMESTAMP,GpuSeconds render jobs).",
        ),
    ],
    profile: Annotated[str, typer.Option("--profile", help="homelab or fleet:NxM.")] = "homelab",
    controllers: Annotated[
        str, typer.Option("--controllers", help="Comma list of controllers to compare.")
    ] = "steward,static,keda,hpa,dynamo,rayserve,aibrix",
    slo_ttft: Annotated[float, typer.Option("--slo-ttft", help="TTFT target, seconds.")] = 3.0,
    slo_itl: Annotated[
        float, typer.Option("--slo-itl", help="Mean inter-token latency target, seconds.")
    ] = 0.1,
    duration: Annotated[float, typer.Option("--duration", help="Hours scored.")] = 1.0,
    rate_scale: Annotated[
        float | None,
        typer.Option("--rate-scale", help="Arrival scale; default: calibrated on training."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The first test seed.")] = 0,
    seeds: Annotated[int, typer.Option("--seeds", help="Test seeds (mean and 95 % CI).")] = 5,
    jobs: Annotated[
        int, typer.Option("--jobs", help="Replays run at once, one process each (same figures).")
    ] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a Markdown report with PNG plots.")
    ] = None,
) -> None:
    """Replay a load under Steward and today's autoscalers, tuned on a training split and scored
    over test seeds against a certified bound; GPU-hours at equal SLO (TTFT and ITL)."""
    from agent.cli.common import console, emit_json, err_console, fail

    # lab is imported here only: the other commands never load the benchmark's modules.
    from lab.bench.trace.run import bench, table
    from tools.errors import InvalidInput

    def progress(what: str) -> None:
        err_console.print(f"replaying: {what}", highlight=False)

    try:
        result = bench(
            trace_name,
            profile=profile,
            controllers=controllers,
            slo_ttft_s=slo_ttft,
            slo_itl_s=slo_itl,
            duration_h=duration,
            rate_scale=rate_scale,
            seed=seed,
            seeds=seeds,
            progress=None if json_out else progress,
            jobs=jobs,
        )
    except InvalidInput as exc:
        fail(str(exc))
    for beaten in result.beaten():
        err_console.print(
            f"bound beaten: {beaten.controller} met the target on {beaten.gpu_hours:g} GPU-h, "
            f"below the bound's {beaten.bound_gpu_hours:g} (seed {beaten.seed}): the bound's "
            "search missed a cheaper schedule",
            highlight=False,
        )
    if report is not None:
        from lab.bench.trace import report as markdown  # matplotlib loads only for a report

        written = markdown.write(result, report)
        err_console.print(f"report: {written}")
    if json_out:
        emit_json(result.figures())
        return
    console.print(f"{'controller':10} {'SLO %':>7} {'95 % CI':>15} {'TTFT %':>7} {'ITL %':>7} "
                  f"{'GPU-h':>8} {'x bound':>7} {'acts':>6} {'rev':>5}  knob",
                  soft_wrap=True)  # fmt: skip
    for name, f in table(result):
        lo, hi = f["slo_attainment_ci"]
        ratio = f["ratio_to_bound"]
        console.print(
            f"{name:10} {f['slo_attainment'] * 100:7.2f} "
            f"{lo * 100:7.2f}-{hi * 100:<7.2f} "
            f"{f['ttft_attainment'] * 100:7.2f} {f['itl_attainment'] * 100:7.2f} "
            f"{f['gpu_hours']:8.3f} {'-' if ratio is None else f'{ratio:.3f}':>7} "
            f"{f['scaling_actions']:6.1f} {f['reversals']:5.1f}  {f['knob']}",
            highlight=False,
            soft_wrap=True,
        )


def figure_lines(figures: Mapping[str, object], indent: str = "") -> list[str]:
    """Figures as text for people: `key: value` a line, a nested group under its name, timing
    groups (a `median_ms`) on one line; --json prints the same figures for machines."""
    lines: list[str] = []
    for key, value in figures.items():
        if isinstance(value, Mapping) and "median_ms" in value:
            parts = [f"{k.removesuffix('_ms')} {_number(v)} ms" for k, v in value.items()
                     if k.endswith("_ms")]  # fmt: skip
            rest = [f"{k} {_number(v)}" for k, v in value.items()
                    if not k.endswith("_ms") and k != "name"]  # fmt: skip
            lines.append(f"{indent}{key}: " + ", ".join(parts + rest))
        elif isinstance(value, Mapping):
            lines.append(f"{indent}{key}:")
            lines += figure_lines(value, indent + "  ")
        else:
            lines.append(f"{indent}{key}: {_number(value)}")
    return lines


def print_figures(figures: Mapping[str, object]) -> None:
    for line in figure_lines(figures):
        print(line)
    sys.stdout.flush()


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
