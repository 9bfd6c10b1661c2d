"""launchbench ab on the CPU: variants, the interleaving order, workers started as programs with each
variant's environment, both sides as ordinary run directories, and the paired statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from builders import TINY_AB_SCENARIO, make_run
from fakes import (
    ORDER_FILE_VARIABLE,
    SAMPLES_FILE_VARIABLE,
    SIDE_VARIABLE,
    SLOWDOWN_VARIABLE,
    recording_backend,
)

from launchbench.analysis.compare import CompareSettings, compare_paired, compare_runs
from launchbench.errors import LaunchbenchError
from launchbench.results.schema import CaseResult, RunRecord
from launchbench.results.store import load_run
from launchbench.run import runner
from launchbench.run.ab import (
    Side,
    Variant,
    VariantError,
    ab_schedule,
    child_environment,
    paired_cases,
    parse_variant,
    round_order,
    run_ab,
)
from launchbench.run.child_env import SOURCE_ROOT

TESTS = Path(__file__).parents[1]
SCENARIO = TINY_AB_SCENARIO
# the order SCENARIO's case-passes are measured in (A first when case index + pass index is even)
ORDER = [
    "A empty/length=1",
    "B empty/length=1",
    "B empty/length=10",
    "A empty/length=10",
    "B empty/length=1",
    "A empty/length=1",
    "A empty/length=10",
    "B empty/length=10",
]


def test_parse_variant(tmp_path: Path) -> None:
    assert parse_variant("") == Variant()
    v = parse_variant(f"path={tmp_path},env=CUPY_ACCELERATORS=cub,env=X=,scenario=s.yaml")
    assert v.paths == (str(tmp_path),) and dict(v.env) == {"CUPY_ACCELERATORS": "cub", "X": ""}
    assert v.scenarios == ("s.yaml",) and v.python is None
    for bad in ("pyton=x", "env=NOVALUE", f"path={tmp_path / 'nope'}", "python=/no/such/python", "path="):
        with pytest.raises(VariantError):
            parse_variant(bad)


def test_child_environment_puts_this_launchbench_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = child_environment(Variant(paths=(str(tmp_path),), env={"X": "1"}))
    assert env["PYTHONPATH"].split(":") == [str(SOURCE_ROOT), str(tmp_path.resolve()), "/elsewhere"]
    assert env["X"] == "1"


def test_round_order_alternates_over_cases_and_passes() -> None:
    assert [round_order(i, 0) for i in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]
    assert [round_order(i, 1) for i in range(4)] == [(1, 0), (0, 1), (1, 0), (0, 1)]


def _plan(tmp_path: Path, text: str = SCENARIO, name: str = "tiny.yaml") -> runner.Plan:
    path = tmp_path / name
    path.write_text(text)
    return runner.plan([path])


def test_schedule_measures_every_case_on_both_sides_each_pass(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    pairs = paired_cases(plan, plan)
    schedule = ab_schedule(pairs)
    assert schedule == [
        (0, 0, 0),
        (0, 0, 1),
        (0, 1, 1),
        (0, 1, 0),
        (1, 0, 1),
        (1, 0, 0),
        (1, 1, 0),
        (1, 1, 1),
    ]
    firsts = [side for k, i, side in schedule[::2]]
    assert firsts.count(0) == firsts.count(1)  # neither side always goes first


def test_variants_must_hold_the_same_cases(tmp_path: Path) -> None:
    other = _plan(tmp_path, SCENARIO.replace("[1, 10]", "[1, 100]"), "other.yaml")
    with pytest.raises(LaunchbenchError, match="same cases"):
        paired_cases(_plan(tmp_path), other)


def test_run_ab_interleaves_in_worker_programs_with_each_variants_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sides measured by workers started as programs (python -m launchbench.run.worker) with the
    variant's variables: the order file shows A B / B A alternating; both run directories load."""
    order = tmp_path / "order.txt"
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(order))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # the workers import the scripted backend from tests/
    plan = _plan(tmp_path)
    sides = (
        Side("A", parse_variant(f"env={SIDE_VARIABLE}=A"), plan, tmp_path / "out" / "a"),
        Side(
            "B",
            parse_variant(f"env={SIDE_VARIABLE}=B,env={SLOWDOWN_VARIABLE}=0.10"),
            plan,
            tmp_path / "out" / "b",
        ),
    )
    a, b = run_ab(sides, runner.RunOptions(backend_factory=recording_backend))
    lines = order.read_text().split("\n")[:-1]
    assert lines == ORDER
    for record, side in ((a, "A"), (b, "B")):
        assert record.status == "complete" and record.settings.ab.side == side
        assert load_run(tmp_path / "out" / side.lower()) == record
        assert all(len(case.pass_sizes("eager") or []) == 2 for case in record.cases)
    comparison = compare_paired(a, b, CompareSettings(metrics=("wall_us_per_launch",)))
    assert comparison.paired
    eager = [row.metric("wall_us_per_launch") for row in comparison.rows if row.mode == "eager"]
    assert all(m.ratio == pytest.approx(1.10, rel=0.03) for m in eager)


def test_both_sides_sample_a_case_in_alternating_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within one pass of a case the two sides take turns round by round (A B B A …), so their samples
    come from the same seconds: the log of samples switches side many times per case, not once."""
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(tmp_path / "order.txt"))
    samples = tmp_path / "samples.txt"
    monkeypatch.setenv(SAMPLES_FILE_VARIABLE, str(samples))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    text = SCENARIO.replace(
        "max_time: 0.2, passes: 2, min_samples: 5", "max_time: 5, passes: 1, min_samples: 20"
    )
    plan = _plan(tmp_path, text)
    sides = tuple(
        Side(name, parse_variant(f"env={SIDE_VARIABLE}={name}"), plan, tmp_path / "out" / name.lower())
        for name in ("A", "B")
    )
    a, b = run_ab(sides, runner.RunOptions(backend_factory=recording_backend))  # type: ignore[arg-type]
    lines = samples.read_text().split("\n")[:-1]
    for case_id in ("empty/length=1", "empty/length=10"):
        turns = [side for side, case in (line.split(" ", 1) for line in lines) if case == case_id]
        blocks = [side for n, side in enumerate(turns) if n == 0 or turns[n - 1] != side]
        assert len(turns) >= 40  # 20 samples a side at least
        assert len(blocks) >= 4 and blocks[:2] in (["A", "B"], ["B", "A"])
        assert all(blocks[n] != blocks[n + 1] for n in range(len(blocks) - 1))
    for record in (a, b):
        assert all(
            len(case.modes["eager"].passes[0].samples["wall_s_per_iter"]) >= 20 for case in record.cases
        )


# ------------------------------------------------------------------------------- paired statistics


def _with_round_levels(run: RunRecord, levels: list[float], factor: float) -> RunRecord:
    """The run with pass k of every eager row scaled by levels[k] × factor: a host state shared by both
    sides of a round (levels) and a change of this side (factor)."""
    cases: list[CaseResult] = []
    for case in run.cases:
        result = case.modes["eager"]
        sizes = result.pass_sizes
        scale = np.repeat([level * factor for level in levels[: len(sizes)]], sizes)
        samples = {k: (np.asarray(v) * scale).tolist() for k, v in result.samples.items()}
        cases.append(case.model_copy(update={"modes": {**case.modes, "eager": result.with_samples(samples)}}))
    return run.model_copy(update={"cases": cases})


@pytest.fixture
def drifting() -> list[float]:
    """Host states of 5 rounds 30% apart: far larger than the change to detect."""
    return [1.0, 1.3, 0.95, 1.25, 1.05]


def test_pairing_cancels_the_drift_that_separate_runs_cannot(drifting: list[float]) -> None:
    base = make_run(seed=0, passes=5)
    a = _with_round_levels(base, drifting, 1.0)
    b = _with_round_levels(make_run(seed=1, passes=5), drifting, 1.10)
    settings = CompareSettings(metrics=("wall_us_per_launch",))
    paired = {
        r.key: r.metric("wall_us_per_launch")
        for r in compare_paired(a, b, settings).rows
        if r.mode == "eager"
    }
    assert {m.verdict for m in paired.values()} == {"slower"}
    assert all(m.ratio == pytest.approx(1.10, rel=0.04) and m.mde < 0.06 for m in paired.values())
    # the same rounds compared as separate runs: different seeds, B's passes reversed in time
    unpaired = _with_round_levels(make_run(seed=1, passes=5), drifting[::-1], 1.10)
    separate = {
        r.key: r.metric("wall_us_per_launch")
        for r in compare_runs(a, unpaired, settings).rows
        if r.mode == "eager"
    }
    assert all(m.mde > 0.10 for m in separate.values())


def test_paired_a_a_flags_nothing(drifting: list[float]) -> None:
    a = _with_round_levels(make_run(seed=0, passes=5), drifting, 1.0)
    b = _with_round_levels(make_run(seed=1, passes=5), drifting, 1.0)
    comparison = compare_paired(a, b)
    verdicts = {m.verdict for row in comparison.rows for m in row.metrics}
    assert verdicts <= {"same", "uncertain"} and "same" in verdicts


def test_paired_ratio_is_the_mean_log_round_ratio() -> None:
    a = _with_round_levels(make_run(seed=0, passes=3), [1.0, 1.0, 1.0], 1.0)
    b = _with_round_levels(make_run(seed=0, passes=3), [1.0, 1.1, 1.21], 1.0)
    row = next(r for r in compare_paired(a, b).rows if r.mode == "eager")
    assert row.metric("wall_us_per_launch").ratio == pytest.approx(math.exp(math.log(1.1)), rel=1e-6)


def test_ab_command_writes_both_runs_and_the_paired_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI end to end on the scripted backend: B's eager launches cost 30% more, so its eager rows are
    slower and the gate exits 1; JUnit, markdown and both run directories are written."""
    import functools

    from click.testing import CliRunner

    from launchbench.cli import cli

    monkeypatch.setattr(
        runner, "RunOptions", functools.partial(runner.RunOptions, backend_factory=recording_backend)
    )
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(tmp_path / "order.txt"))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "ab"
    result = CliRunner().invoke(
        cli,
        [
            "ab",
            str(scenario),
            "--b",
            f"env={SLOWDOWN_VARIABLE}=0.3",
            "--out",
            str(out),
            "--passes",
            "2",
            "--fail-on",
            "wall_us_per_launch:5%",
            "--junit",
            str(tmp_path / "junit.xml"),
            "--format",
            "markdown",
            "-o",
            str(tmp_path / "ab.md"),
            "-q",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "## launchbench ab: ❌" in (tmp_path / "ab.md").read_text()
    assert (out / "comparison.md").is_file() and 'type="regression"' in (tmp_path / "junit.xml").read_text()
    assert load_run(out / "a").status == load_run(out / "b").status == "complete"


def test_compare_pairs_the_two_sides_of_one_ab_directory(tmp_path: Path) -> None:
    """`launchbench compare OUT/a OUT/b` on an ab directory compares round by round, as ab did; the same
    two runs copied into separate folders are separate runs."""
    import json
    import shutil

    from click.testing import CliRunner

    from launchbench.cli import cli

    source = Path(__file__).resolve().parents[2] / "results" / "ab-h200" / "lockstep" / "aa-1"
    runner_ = CliRunner()

    def paired(a: Path, b: Path) -> bool:
        done = runner_.invoke(cli, ["compare", str(a), str(b), "--format", "json", "-q"])
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)["settings"]["paired"]

    assert paired(source / "a", source / "b")
    shutil.copytree(source / "a", tmp_path / "one" / "a")
    shutil.copytree(source / "b", tmp_path / "two" / "b")
    assert not paired(tmp_path / "one" / "a", tmp_path / "two" / "b")


def test_paired_rows_that_cannot_see_the_rule_fail_the_gate(drifting: list[float]) -> None:
    """B's rounds drift on their own (not with A's): the pairing cannot cancel it, the eager rows' MDE
    exceeds 5%, and the gate fails them as blind unless allowed."""
    from launchbench.analysis.gate import BlindRows, evaluate_rules, parse_rule

    a = _with_round_levels(make_run(seed=0, passes=5), [1.0] * 5, 1.0)
    b = _with_round_levels(make_run(seed=1, passes=5), drifting, 1.0)
    comparison = compare_paired(a, b, CompareSettings(metrics=("wall_us_per_launch",)))
    rule = [parse_rule("wall_us_per_launch:5%")]
    report = evaluate_rules(comparison, rule)
    blind = {(c.case, c.mode) for c in report.failures if c.kind == "blind"}
    assert not report.passed and blind and {mode for _, mode in blind} == {"eager"}
    assert evaluate_rules(comparison, rule, blind=BlindRows.ALLOW).passed
    host = evaluate_rules(comparison, rule, scope="gpu-bound")
    assert host.passed and {c.mode for c in host.checks} == {"graph"}


def test_ab_gate_rows_leaves_the_other_rows_ungated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """B's eager launches cost 30% more: ab's gate over the GPU-bound rows alone does not see them
    (exit 0, the host-bound rows noted as not gated); --allow-blind is accepted."""
    import functools

    from click.testing import CliRunner

    from launchbench.cli import cli

    monkeypatch.setattr(
        runner, "RunOptions", functools.partial(runner.RunOptions, backend_factory=recording_backend)
    )
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(tmp_path / "order.txt"))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(SCENARIO)
    args = ["ab", str(scenario), "--b", f"env={SLOWDOWN_VARIABLE}=0.3", "-d", str(tmp_path / "ab")]
    rule = [
        "--passes",
        "2",
        "--fail-on",
        "wall_us_per_launch:5%",
        "--gate-rows",
        "gpu-bound",
        "--allow-blind",
    ]
    result = CliRunner().invoke(cli, [*args, *rule])
    assert result.exit_code == 0, result.output
    assert "host-bound row(s) not gated (--gate-rows gpu-bound)" in result.output
