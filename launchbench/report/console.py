"""The rich output of a run: progress while measuring, one line per finished case, then the summary
table. The consoles it prints to are report.terminal's."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from launchbench.analysis.host_levels import level_lines
from launchbench.analysis.table import run_table
from launchbench.report.terminal import literal
from launchbench.results.environment import describe_environment
from launchbench.results.schema import CaseResult, RunRecord
from launchbench.scenario.core import Case

TORCH_GRAPH = "torch_graph"  # the graph mode a chain with torch steps has besides "graph"


class Verbosity(Enum):
    """How much a run's console says: a line per finished case and the run's start (NORMAL), or only
    failures and notes (QUIET: --quiet)."""

    NORMAL = "normal"
    QUIET = "quiet"


def _fmt(value: Any, digits: int = 2, suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}{suffix}"
        return f"{value:.{digits}f}{suffix}"
    return f"{value}{suffix}"


class ConsoleEvents:
    """RunEvents on a rich console: a bar over the case passes (on an interactive terminal only: a CI log
    gets no bar and no blank line where it stopped), one line per finished case (after its last pass, or
    when it fails)."""

    def __init__(self, console: Console, verbosity: Verbosity = Verbosity.NORMAL):
        self.console = console
        self.quiet = quiet = verbosity is Verbosity.QUIET
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=quiet or not console.is_interactive,
        )
        self._task: Any = None
        self._index = 0
        self._case: Case | None = None

    def run_started(self, run_dir: Path, cases: Sequence[Case], environment: dict[str, Any]) -> None:
        if not self.quiet:
            self.console.print(
                f"[bold]launchbench[/] on {literal(describe_environment(environment))} → {literal(str(run_dir))}"
            )
        self.progress.start()
        self._task = self.progress.add_task("measuring", total=len(cases))

    def case_started(self, case: Case, index: int, total: int) -> None:
        self._index = index
        self._case = case
        self.progress.update(
            self._task, description=literal(f"{case.scenario} {case.case_id}"), completed=index, total=total
        )

    def case_progress(self, fraction: float) -> None:
        self.progress.update(self._task, completed=self._index + min(fraction, 0.99))

    def case_finished(self, result: CaseResult) -> None:
        self.progress.update(self._task, completed=self._index + 1)
        passes = self._case.measure.passes if self._case is not None else 1
        if not result.error and result.passes_done < passes:
            return  # a pass of a case that has more to come
        if result.error:
            self.console.print(
                f"[red]✗ {literal(result.scenario)} {literal(result.case_id)}: {literal(result.error)}[/]"
            )
        elif not self.quiet:
            refused = [
                f"{mode}: {literal(result.modes[mode].reason or '')}"
                for mode in ("graph", TORCH_GRAPH)
                if mode in result.modes and result.modes[mode].status == "not_capturable"
            ]
            note = f" ({'; '.join(refused)})" if refused else ""
            self.console.print(
                f"[green]✓[/] {literal(result.scenario)} {literal(result.case_id)} in {result.elapsed_s:.1f} s{note}"
            )

    def note(self, message: str) -> None:
        self.console.print(f"[yellow]note:[/] {literal(message)}")

    def close(self) -> None:
        """Stop the bar (once; a bar never started prints nothing)."""
        if self._task is not None:
            self.progress.stop()
            self._task = None


SUMMARY_HEADERS = (
    "launches",
    "eager µs/launch",
    "graph µs/launch",
    "eager CPU µs/launch",
    "graph CPU µs/launch",
    "speedup",
    "graph setup µs",
    "break-even iters",
    "match",
)


def summary_table(run: RunRecord, frame: pd.DataFrame | None = None) -> Table:
    """The run's headline table (``frame``: its run_table, when the caller has it already): a row per
    case against its ``graph`` mode; where the run has torch_graph rows, a row per case and graph mode,
    the mode named in a column of its own."""
    frame = run_table(run) if frame is None else frame
    table = Table(
        title=literal(f"{', '.join(s.name for s in run.scenarios)} on {run.gpu_name}"), show_lines=False
    )
    fixed = frame[frame["iterations_per_shape"].isna()] if "iterations_per_shape" in frame else frame
    graph_modes = ("graph", TORCH_GRAPH) if (fixed["mode"] == TORCH_GRAPH).any() else ("graph",)
    table.add_column("case", justify="left", no_wrap=True, min_width=18)
    if len(graph_modes) > 1:
        table.add_column("graph mode", justify="left", no_wrap=True)
    for header in SUMMARY_HEADERS:
        table.add_column(header, justify="right")
    for (scenario, case), group in fixed.groupby(["scenario", "case"], sort=False):
        rows = {row["mode"]: row for _, row in group.iterrows()}
        eager = rows.get("eager", pd.Series(dtype=object))
        name = literal(f"{scenario} {case}" if len(run.scenarios) > 1 else str(case))
        for mode in graph_modes:
            if mode != "graph" and mode not in rows:
                continue
            graph = rows.get(mode, pd.Series(dtype=object))
            head = [name, mode] if len(graph_modes) > 1 else [name]
            table.add_row(*head, *_summary_cells(eager, graph))
    return table


def _summary_cells(eager: pd.Series, graph: pd.Series) -> list[str]:
    """A summary row's cells after its case (and graph mode): eager against one graph mode."""
    return [
        str(eager.get("launches_per_iter", "")),
        _fmt(eager.get("wall_us_per_launch")),
        _fmt(graph.get("wall_us_per_launch"), 3),
        _fmt(eager.get("cpu_us_per_launch")),
        _fmt(graph.get("cpu_us_per_launch"), 3),
        _fmt(graph.get("speedup"), 1, "×"),
        _fmt(graph.get("setup_us"), 0),
        _fmt(graph.get("break_even_iters"), 1),
        _match_text(graph.get("outputs_match")),
    ]


def _match_text(match: Any) -> str:
    if match is None or (isinstance(match, float) and math.isnan(match)):
        return "—"
    return "✓" if match else "[red]✗[/]"


def shape_table(run: RunRecord, frame: pd.DataFrame | None = None) -> Table | None:
    """The cases whose sizes change: wall time per iteration of each mode, the setup each graph strategy
    pays per change, refused updates, the fastest mode; None when the run has no such case."""
    frame = run_table(run) if frame is None else frame
    shaped = frame[frame["iterations_per_shape"].notna()]
    if shaped.empty:
        return None
    table = Table(title="sizes that change between iterations (µs per iteration; setup µs per change)")
    headers = ["case", "iters/shape", "shapes", "eager", "recapture", "cache", "update"]
    headers += ["recapture setup", "cache setup", "update setup", "refused updates", "fastest", "match"]
    for header in headers:
        table.add_column(header, justify="left" if header in ("case", "fastest") else "right", no_wrap=True)
    for (scenario, case), group in shaped.groupby(["scenario", "case"], sort=False):
        rows = {str(row["mode"]): row for _, row in group.iterrows()}
        first = group.iloc[0]
        walls = {m: r["wall_us_per_iter"] for m, r in rows.items() if pd.notna(r["wall_us_per_iter"])}
        cells = [literal(f"{scenario} {case}" if len(run.scenarios) > 1 else str(case))]
        cells += [str(int(first["iterations_per_shape"])), str(int(first["distinct_shapes"]))]
        for mode in ("eager", "recapture", "cache", "update"):
            row = rows.get(mode)
            cells.append(_fmt(row["wall_us_per_iter"] if row is not None else None, 1) if row is None or
                         pd.notna(row["wall_us_per_iter"]) else str(row["status"]).replace("_", " "))  # fmt: skip
        for mode in ("recapture", "cache", "update"):
            row = rows.get(mode)
            cells.append(_fmt(None if row is None else row["setup_us_per_change"], 1))
        update = rows.get("update")
        cells.append(_fmt(None if update is None else update["update_refusals"], 0))
        cells.append(min(walls, key=lambda m: walls[m]) if walls else "—")
        cells.append(_match_text(first["outputs_match"]))
        table.add_row(*cells)
    return table


def shape_model_lines(run: RunRecord, frame: pd.DataFrame | None = None) -> list[str]:
    """One line per chain whose sizes change, where the iterations per shape vary: each mode's modelled
    cost per iteration, max(GPU, host + per change / k), and where each strategy is the fastest."""
    from launchbench.analysis.costmodel import fit_shape_model

    model = fit_shape_model(run_table(run) if frame is None else frame)
    lines = []
    for (scenario, chain, group), rows in model.groupby(["scenario", "chain", "group"], sort=False):
        where = f"{scenario} {chain}" if len(run.scenarios) > 1 else str(chain)
        if group != "{}":
            where += f" {group}"
        costs = ", ".join(
            f"{r['mode']} max({r['gpu_bound_us']:.1f}, {r['host_us']:.1f} + {r['per_change_us']:.1f}/k)"
            for _, r in rows.iterrows()
        )
        wins = []
        for _, r in rows.sort_values("wins_from_iters_per_shape").iterrows():
            low, high = r["wins_from_iters_per_shape"], r["wins_to_iters_per_shape"]
            if pd.isna(low):
                continue
            span = f"k ≥ {low:.3g}" if math.isinf(high) else f"{low:.3g} ≤ k < {high:.3g}"
            wins.append(f"{r['mode']} for {span}")
        lines.append(f"{where}: {costs}; fastest: {', '.join(wins)}")
    return lines


def cost_model_lines(run: RunRecord, frame: pd.DataFrame | None = None) -> list[str]:
    """One line per chain whose length varies: the fitted per-launch and fixed costs and the crossover."""
    from launchbench.analysis.costmodel import fit_cost_model

    model = fit_cost_model(run_table(run) if frame is None else frame)
    lines = []
    for (scenario, chain, group), rows in model.groupby(["scenario", "chain", "group"], sort=False):
        fits = {r["mode"]: r for _, r in rows.iterrows()}
        if "eager" not in fits or "graph" not in fits:
            continue
        e, g = fits["eager"], fits["graph"]
        where = f"{scenario} {chain}" if len(run.scenarios) > 1 else str(chain)
        if group != "{}":
            where += f" {group}"
        crossover = g["crossover_launches"]
        if math.isinf(crossover) or math.isnan(crossover):
            verdict = "the graph never wins per iteration"
        elif crossover <= 1:
            verdict = "the graph wins from the first launch"
        else:
            verdict = f"the graph wins above {crossover:.1f} launches per chain"
        lines.append(
            f"{where}: eager {e['per_launch_us']:.3f} ± {e['per_launch_us_se']:.3f} µs/launch + ({e['fixed_us']:.1f} ± {e['fixed_us_se']:.1f}) µs, "
            f"graph {g['per_launch_us']:.3f} ± {g['per_launch_us_se']:.3f} µs/launch + ({g['fixed_us']:.1f} ± {g['fixed_us_se']:.1f}) µs; "
            f"{verdict}, saving {g['saving_us_per_launch']:.2f} µs per launch ({g['asymptotic_speedup']:.1f}× asymptotically)"
        )
    return lines


def canary_line(run: RunRecord) -> str | None:
    """The workers' reference over the run: the graph reading at the workers' starts and after their
    cases (µs per node), its largest move, and the cases measured in a disturbed state; None where no
    worker read one."""
    checks = run.canary_checks()
    if not checks:
        return None
    starts = [k.start.graph_s_per_node * 1e6 for _, k in checks]
    afters = [k.after.graph_s_per_node * 1e6 for _, k in checks]
    largest = max((k.graph_shift for _, k in checks), key=abs)
    line = (
        f"canary: graph {statistics.median(starts):.3f} → {statistics.median(afters):.3f} µs/node "
        f"(largest move {largest:+.1%} over {len(checks)} case-passes)"
    )
    disturbed = sorted({case for case, k in checks if k.disturbed})
    if not disturbed:
        return line
    return (
        f"{line}; [red]measured in a disturbed state[/] (the reference moved > 3%; their workers were "
        f"replaced): {literal(', '.join(disturbed))}"
    )


def _print_block(console: Console, header: str, lines: Sequence[str]) -> None:
    """A header and its indented lines, where there are lines."""
    if lines:
        console.print(header)
        for line in lines:
            console.print(f"  {literal(line)}")


def print_summary(console: Console, run: RunRecord, run_dir: Path, frame: pd.DataFrame | None = None) -> None:
    """The run's summary table, its cost models, host levels and canary, what failed or hit the budget
    (``frame``: the run's results table, where the caller has it)."""
    frame = run_table(run) if frame is None else frame
    console.print(summary_table(run, frame))
    shapes = shape_table(run, frame)
    if shapes is not None:
        console.print(shapes)
    _print_block(
        console, "[bold]cost model[/] (time per iteration = fixed + per-launch × launches):",
        cost_model_lines(run, frame),
    )  # fmt: skip
    _print_block(
        console,
        "[bold]cost model[/] (µs per iteration = max(GPU, host + per change / k iterations per shape)):",
        shape_model_lines(run, frame),
    )
    _print_block(
        console, "[bold]host levels[/] (per row, the pass medians: see docs/methodology.md, Host levels):",
        [literal(line) for line in level_lines(run)],
    )  # fmt: skip
    canary = canary_line(run)
    if canary:
        console.print(canary)
    failed = [c for c in run.cases if c.error]
    budget = [(c.case_id, m) for c in run.cases for m, r in c.modes.items() if r.status == "budget"]
    if budget:
        console.print(
            f"[yellow]{len(budget)} mode(s) hit the time budget before the noise target[/] (status 'budget' in results.csv)"
        )
    if failed:
        console.print(
            f"[red]{len(failed)} case(s) failed[/]: " + literal(", ".join(c.case_id for c in failed))
        )
    console.print(f"results: {literal(str(run_dir / 'results.csv'))} and results.json")
