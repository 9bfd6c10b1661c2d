"""launchbench from Python, for scripts, notebooks and tests: ``run`` measures a scenario (a file, a YAML
string, a mapping or a ``Scenario``) through the runner ``launchbench run`` uses, ``load`` reads a run
directory, ``compare`` compares two runs as ``launchbench compare`` does (its pair comparison is the one
below, the command line's too), and ``Run`` and ``Comparison`` hold what came out: tables as pandas
DataFrames, speedups, output checks, verdicts and the gate.

Heavy libraries (pandas, SciPy, the backend) load when a function runs, not when this module is imported.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args

from launchbench.errors import LaunchbenchError

if TYPE_CHECKING:
    import pandas as pd

    from launchbench.analysis.comparison import CompareSettings, MetricComparison, RowComparison, Verdict
    from launchbench.analysis.comparison import Comparison as Compared
    from launchbench.analysis.evidence import Evidence
    from launchbench.analysis.gate import GatePolicy, GateReport, GateRule, GateScope
    from launchbench.results.metadata import Overrides
    from launchbench.results.schema import CaseResult, RunRecord
    from launchbench.run.runner import Plan
    from launchbench.run.session import RunEvents
    from launchbench.scenario.model import Scenario

ScenarioInput = Union["Scenario", str, Path, Mapping[str, Any]]
"""A scenario file's path (``str`` without a newline, or ``Path``), its YAML text (a ``str`` with a
newline), the mapping the YAML holds, or a validated ``Scenario``."""

Allow = Literal["missing", "empty", "interrupted", "disturbed", "blind", "different-gpu"]
ALLOW_NAMES: tuple[str, ...] = get_args(Allow)
"""What a comparison's gate may let pass, as compare's ``--allow-*`` options name it."""

SCENARIO_FILE = "scenario.yaml"  # a scenario given as text, written into its run directory
SPEEDUP_METRIC = "wall_us_per_iter"  # what a speedup divides: eager's median by the mode's
EAGER = "eager"


class ApiError(LaunchbenchError):
    """An argument the API cannot use (one line, naming the argument)."""


# ------------------------------------------------------------------------------------------ a run


@dataclass(frozen=True)
class RunCase:
    """One case of a run: its record and its rows of results.csv (one per mode)."""

    result: CaseResult
    rows: pd.DataFrame = field(repr=False, compare=False)

    @property
    def case_id(self) -> str:
        return self.result.case_id

    @property
    def outputs_match(self) -> bool:
        """True when the case's outputs were checked, graph against eager, and matched."""
        return self.result.outputs_match is True

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(str(mode) for mode in self.rows["mode"])

    def median(self, mode: str, metric: str = SPEEDUP_METRIC) -> float:
        """The median of ``metric`` (a results.csv column) in ``mode``; ApiError when the mode has none."""
        rows = self.rows[self.rows["mode"] == mode]
        if rows.empty:
            raise ApiError(f"case {self.case_id}: no mode {mode!r} (it has {', '.join(self.modes)})")
        if metric not in rows.columns:
            raise ApiError(f"case {self.case_id}: no column {metric!r} in results.csv")
        value = rows[metric].iloc[0]
        if value is None or value != value:  # NaN: the mode was not measured
            status = rows["status"].iloc[0]
            raise ApiError(f"case {self.case_id}: {mode} has no {metric} (status {status})")
        return float(value)

    def speedup(self, mode: str = "graph", metric: str = SPEEDUP_METRIC) -> float:
        """Eager's median over ``mode``'s (2.0: the mode takes half eager's time)."""
        return self.median(EAGER, metric) / self.median(mode, metric)


@dataclass(frozen=True)
class Run:
    """A measured run: where it is (a run directory or a results file) and its record (results.json);
    ``written``: the results table the run wrote, where ``run`` measured it (``table`` reads it rather
    than building it again)."""

    path: Path
    record: RunRecord = field(repr=False)
    written: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _table(self) -> pd.DataFrame:
        from launchbench.analysis.table import run_table

        return run_table(self.record) if self.written is None else self.written

    def table(self) -> pd.DataFrame:
        """results.csv as a DataFrame (the same columns, computed from the record)."""
        return self._table.copy()

    @property
    def cases(self) -> tuple[RunCase, ...]:
        table = self._table
        return tuple(
            RunCase(case, table[(table["scenario"] == case.scenario) & (table["case"] == case.case_id)])
            for case in self.record.cases
        )

    def case(self, case_id: str) -> RunCase:
        """The case named ``case_id`` (as results.csv's case column names it)."""
        found = [case for case in self.cases if case.case_id == case_id]
        if len(found) != 1:
            ids = ", ".join(case.case_id for case in self.cases)
            what = "no case" if not found else f"{len(found)} cases (one per scenario)"
            raise ApiError(f"{self.path}: {what} named {case_id!r}; the run has {ids}")
        return found[0]

    def only_case(self) -> RunCase:
        """The run's one case; ApiError when it has several (name one with ``case``)."""
        cases = self.cases
        if len(cases) != 1:
            ids = ", ".join(case.case_id for case in cases)
            raise ApiError(f"{self.path}: {len(cases)} cases ({ids}); name one with .case(case_id)")
        return cases[0]

    def speedup(self, mode: str = "graph", metric: str = SPEEDUP_METRIC) -> float:
        """The one case's speedup of ``mode`` over eager (RunCase.speedup)."""
        return self.only_case().speedup(mode, metric)

    @property
    def outputs_match(self) -> bool:
        """True when every case's outputs were checked and matched."""
        return bool(self.record.cases) and all(case.outputs_match for case in self.cases)


def load(path: str | Path) -> Run:
    """The run in ``path`` (a run directory or a results file), validated as ``launchbench compare``
    reads it; ResultsFileError naming the file when it cannot be read."""
    from launchbench.results.store import load_run

    return Run(Path(path), load_run(path))


# ------------------------------------------------------------------------------------------ running


def _overrides(given: Mapping[str, float | int | None], quick: bool) -> Overrides:
    """``run``'s measurement settings (None: the file's) over the preset, held to the scenario file's
    rules (OverridesError naming the setting as ``run``'s argument: max_time, not --max-time)."""
    from launchbench.run.overrides import OverridesError, Preset, measure_overrides

    try:
        return measure_overrides(given, Preset.QUICK if quick else Preset.FILE)
    except OverridesError as err:
        option = re.compile(r"^--([a-z-]+)")
        raise OverridesError(option.sub(lambda m: m[1].replace("-", "_"), str(err))) from None


def run(
    scenario: ScenarioInput,
    *,
    out_dir: str | Path | None = None,
    results_root: str | Path = "results",
    device: int = 0,
    max_time: float | None = None,
    passes: int | None = None,
    target_noise: float | None = None,
    min_samples: int | None = None,
    quick: bool = False,
    max_cases: int | None = None,
    isolate: bool = True,
    backend: str | None = None,
    events: RunEvents | None = None,
) -> Run:
    """Measure ``scenario`` as ``launchbench run`` does (run.runner's plan and run): every case eagerly
    and as a CUDA Graph, each pass in a fresh worker process unless ``isolate`` is false. The run goes
    into ``out_dir`` (default: a new ``<results_root>/<time>-<scenario>``); a scenario given as text, a
    mapping or a model is written there as scenario.yaml first. ``max_time`` … ``quick`` are run's
    measurement options; ``backend`` is ``--backend``'s "module:function"; ``events`` receives the
    progress (nothing is printed). Needs a GPU (NoGpuError without one)."""
    from launchbench.report.run_files import KeptTable
    from launchbench.results.store import release_if_empty
    from launchbench.run import runner
    from launchbench.run.session import RunOptions
    from launchbench.run.worker import load_factory

    if device < 0:
        raise ApiError(f"device {device}: a CUDA device index is 0 or more")
    given = {"max_time": max_time, "passes": passes, "target_noise": target_noise}
    overrides = _overrides({**given, "min_samples": min_samples}, quick)
    tables = KeptTable()
    options = RunOptions(device=device, overrides=overrides, isolate=isolate, write_tables=tables)
    if backend is not None:
        options = replace(options, backend_factory=load_factory(backend))
    claimed = out_dir is None
    the_plan, run_dir = _planned(scenario, out_dir, Path(results_root), overrides, max_cases)
    try:
        record = runner.run(the_plan, run_dir, options, events, argv=["launchbench.api.run"])
    except BaseException:
        _forget_scenario(run_dir, the_plan)
        raise
    finally:
        if claimed:
            release_if_empty(run_dir)
    return Run(run_dir, record, tables.table_of(record))


def _planned(
    scenario: ScenarioInput,
    out_dir: str | Path | None,
    results_root: Path,
    overrides: Overrides,
    max_cases: int | None,
) -> tuple[Plan, Path]:
    """The plan and the run directory (claimed when it is the default one); a scenario given as text is
    planned from a scratch copy first (its name names the directory), then from its copy in the run's."""
    from launchbench.files import check_output_dir
    from launchbench.run import runner

    path, text = _scenario_source(scenario)
    if out_dir is not None:
        check_output_dir(out_dir, "out_dir")
    else:
        check_output_dir(results_root, "results_root")
    if text is None:
        the_plan = runner.plan([path], overrides, max_cases)
        return _checked(the_plan), Path(out_dir) if out_dir else runner.default_run_dir(
            results_root, the_plan.scenarios
        )
    with tempfile.TemporaryDirectory(prefix="launchbench-") as scratch:
        draft = Path(scratch) / SCENARIO_FILE
        draft.write_text(text)
        first = _checked(runner.plan([draft], overrides, max_cases))
    run_dir = Path(out_dir) if out_dir else runner.default_run_dir(results_root, first.scenarios)
    return runner.plan([_write_scenario(run_dir, text)], overrides, max_cases), run_dir


def _checked(the_plan: Plan) -> Plan:
    """The plan, its files' expect: entries held to real columns and cases before anything is measured."""
    from launchbench.analysis.expectations import check_plan_expectations

    check_plan_expectations(the_plan.files, the_plan.cases)
    return the_plan


def _write_scenario(run_dir: Path, text: str) -> Path:
    from launchbench.results.store import atomic_write_text

    target = run_dir / SCENARIO_FILE
    if target.exists():
        raise ApiError(f"{target} exists; not writing the scenario over it (choose another out_dir)")
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)
    return target


def _forget_scenario(run_dir: Path, the_plan: Plan) -> None:
    """A run that failed before its journal began leaves no scenario.yaml of ours behind (it would
    refuse the next run into the folder); an interrupted run keeps it: its record names it."""
    from launchbench.results.store import JOURNAL

    written = run_dir / SCENARIO_FILE
    if not (run_dir / JOURNAL).exists() and any(s.file == str(written) for s in the_plan.scenarios):
        written.unlink(missing_ok=True)


def _scenario_source(scenario: ScenarioInput) -> tuple[Path, str | None]:
    """(the file, None) for a path; (no file, the YAML text) for text, a mapping or a model."""
    import yaml

    from launchbench.scenario.model import Scenario

    if isinstance(scenario, Path):
        return scenario, None
    if isinstance(scenario, str):
        return (Path(scenario), None) if "\n" not in scenario else (Path(), scenario)
    if isinstance(scenario, Scenario):
        data = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return Path(), yaml.safe_dump(data, sort_keys=False)
    if isinstance(scenario, Mapping):
        return Path(), yaml.safe_dump(dict(scenario), sort_keys=False)
    raise ApiError(f"scenario: a path, YAML text, a mapping or a Scenario, not a {type(scenario).__name__}")


# ------------------------------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class VerdictRow:
    """One row's verdict on one metric."""

    scenario: str
    case: str
    mode: str
    metric: str
    verdict: Verdict
    ratio: float  # current's median over baseline's
    p_value: float


@dataclass(frozen=True)
class Comparison:
    """Two runs compared row by row (``result``, analysis.compare's) and, where rules were given, its
    gate's report (``gate``)."""

    result: Compared = field(repr=False)
    gate: GateReport | None = field(repr=False)

    @property
    def rows(self) -> tuple[RowComparison, ...]:
        return self.result.rows

    @property
    def verdicts(self) -> tuple[VerdictRow, ...]:
        """Every row's verdict on every compared metric."""
        return tuple(
            VerdictRow(row.scenario, row.case, row.mode, mc.metric, mc.verdict, mc.ratio, mc.p_value)
            for row in self.result.rows
            for mc in row.metrics
        )

    @property
    def passed(self) -> bool:
        """With fail_on rules: the gate passed (as compare's exit 0). Without: no verdict is slower."""
        if self.gate is not None:
            return self.gate.passed
        return not any(v.verdict == "slower" for v in self.verdicts)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.result.all_warnings

    def table(self) -> pd.DataFrame:
        """One row per compared row and metric: compare's CSV as a DataFrame."""
        from launchbench.report.tables import comparison_frame

        return comparison_frame(self.result, self.gate)

    def metric(self, case: str, mode: str, metric: str) -> MetricComparison:
        """The comparison of one row's metric (the first scenario holding the case)."""
        for row in self.result.rows:
            if row.case == case and row.mode == mode and (found := row.metric(metric)) is not None:
                return found
        raise ApiError(f"no compared row {case} [{mode}] with metric {metric!r}")


def compare(
    baseline: Run | str | Path,
    current: Run | str | Path,
    *,
    metrics: Sequence[str] = (),
    thresholds: str | Sequence[str] = (),
    fail_on: str | Sequence[str] = (),
    alpha: float | None = None,
    gate_rows: GateScope = "all",
    allow: Collection[Allow] = (),
) -> Comparison:
    """``launchbench compare BASELINE CURRENT``: ``metrics``, ``thresholds`` ("10%", "latency_us:10%"),
    ``fail_on`` ("wall_us_per_launch:5%", "…:2us"), ``alpha``, ``gate_rows`` and ``allow`` (the
    ``--allow-*`` options) as compare takes them. With ``fail_on`` the gate judges the comparison
    (``Comparison.passed``); the sides of one ``launchbench ab`` directory are paired as compare pairs them."""
    from launchbench.analysis.comparison import parse_threshold
    from launchbench.analysis.defaults import DEFAULT_ALPHA
    from launchbench.analysis.gate import gated_settings, parse_rule

    rules = tuple(parse_rule(text) for text in _texts(fail_on))
    settings = gated_settings(
        tuple(metrics), [parse_threshold(t) for t in _texts(thresholds)], alpha or DEFAULT_ALPHA, rules
    )
    unknown = sorted(set(allow) - set(ALLOW_NAMES))
    if unknown:
        raise ApiError(f"allow: unknown {', '.join(unknown)}; choose from {', '.join(ALLOW_NAMES)}")
    policy = _policy(rules, gate_rows, allow) if rules else None
    sides = (_side(baseline), _side(current))
    design = pair_design(*sides)
    result, report = compare_pair(*sides, settings, policy, "different-gpu" in allow, design)
    return Comparison(result, report)


def _texts(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _side(side: Run | str | Path) -> tuple[str, RunRecord]:
    loaded = side if isinstance(side, Run) else load(side)
    return str(loaded.path), loaded.record


def _policy(rules: tuple[GateRule, ...], rows: GateScope, allow: Collection[Allow]) -> GatePolicy:
    from launchbench.analysis.coverage import CoveragePolicy
    from launchbench.analysis.gate import GatePolicy

    coverage = CoveragePolicy(
        allow_empty="empty" in allow,
        allow_missing="missing" in allow,
        allow_interrupted="interrupted" in allow,
        allow_disturbed="disturbed" in allow,
    )
    return GatePolicy(rules, rows, "blind" in allow, coverage)


def pair_design(baseline: tuple[str, RunRecord], current: tuple[str, RunRecord]) -> Evidence:
    """Paired rounds for side A and side B of one ``launchbench ab`` directory; separate runs otherwise."""
    from launchbench.analysis.compare import PAIRED_ROUNDS, SEPARATE_RUNS, sides_of_one_ab

    (base_label, base_run), (cur_label, cur_run) = baseline, current
    return PAIRED_ROUNDS if sides_of_one_ab(base_run, cur_run, base_label, cur_label) else SEPARATE_RUNS


def compare_pair(
    baseline: tuple[str, RunRecord],
    current: tuple[str, RunRecord],
    settings: CompareSettings,
    policy: GatePolicy | None,
    allow_different_gpu: bool,
    design: Evidence,
    jobs: int = 1,
) -> tuple[Compared, GateReport | None]:
    """One BASELINE → CURRENT comparison (``launchbench compare``'s and the API's) with its warnings,
    and its gate's report (analysis.gate.gate) where a gate was asked; ``jobs`` as compare_runs takes it
    (the command: one per CPU; the API: 1, no process forked)."""
    from launchbench.analysis.compare import compare_runs
    from launchbench.analysis.comparison import GpuMismatch
    from launchbench.analysis.gate import ComparedRuns, gate
    from launchbench.results.merge_runs import refuse_repeated_cases

    (base_label, base_run), (cur_label, cur_run) = baseline, current
    for path, record in (baseline, current):
        refuse_repeated_cases(
            record, path, "compare one member's run, or score them with launchbench fleet report"
        )
    comparison = compare_runs(
        base_run,
        cur_run,
        settings,
        gpu_mismatch=GpuMismatch.ALLOW if allow_different_gpu else GpuMismatch.REFUSE,
        baseline_label=base_label,
        current_label=cur_label,
        design=design,
        jobs=jobs,
    )
    comparison = replace(comparison, warnings=run_warnings(base_run, cur_run, comparison))
    if policy is None:
        return comparison, None
    return comparison, gate(ComparedRuns(comparison, base_run, cur_run), policy)


def run_warnings(baseline: RunRecord, current: RunRecord, comparison: Compared) -> tuple[str, ...]:
    """What a gate would refuse or note about the runs, said in every output (with no gate, nothing
    fails on them): an unfinished run, no rows in common, a scenario file that changed, a floor measured
    in another process layout."""
    from launchbench.analysis.coverage import floor_layout_differences, scenario_differences, unfinished

    out = [f"the {side} run {why}" for side, record in (("baseline", baseline), ("current", current))
           if (why := unfinished(record))]  # fmt: skip
    if comparison.rows and all(row.only_in is not None for row in comparison.rows):
        out.append("the runs have no rows in common")
    return (*out, *scenario_differences(baseline, current), *floor_layout_differences(baseline, current))
