"""The command line as a whole: every command documented and spelled alike, the lazy command group, output
that reads in CI logs (CliRunner's stdout is not a terminal)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from builders import make_run
from click.testing import CliRunner
from fakes import scripted_backend
from rich.console import Console

from launchbench.cli import COMMANDS, cli, load_command
from launchbench.report.run_files import write_run_files as write_run
from launchbench.results.metadata import Overrides

ROOT = Path(__file__).parents[2]
H200 = Path(__file__).parents[1] / "data" / "h200"
sys.path.insert(0, str(ROOT / "scripts"))
import docs  # noqa: E402


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_quiet_and_exit_codes(name: str) -> None:
    command = load_command(name)
    assert command.help and command.short_help == COMMANDS[name].short_help
    result = invoke(name, "--help")
    assert result.exit_code == 0
    assert "-q, --quiet" in result.output
    assert "Exit 0" in " ".join(result.output.split())


@pytest.mark.parametrize("name", [name for name in COMMANDS if isinstance(load_command(name), click.Group)])
def test_a_groups_subcommands_are_listed_with_whole_sentences(name: str) -> None:
    """`launchbench history --help` lists each subcommand with a sentence of its own, not its help cut
    short with "..." by click (a subcommand whose help is longer gives a short_help)."""
    group = load_command(name)
    assert isinstance(group, click.Group)
    listed = invoke(name, "--help").output.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(group.commands)
    for line in listed:
        assert line.endswith(".") and not line.endswith("..."), line


def test_the_command_reference_is_the_live_help() -> None:
    """docs/cli.md is every command's --help (regenerate with python scripts/docs.py)."""
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == docs.cli_markdown()
    for name in COMMANDS:
        assert f"launchbench {name}" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_column_reference_is_the_code_column_list() -> None:
    """docs/columns.md lists launchbench.analysis.columns.COLUMNS (regenerate with python scripts/docs.py)."""
    assert (ROOT / "docs" / "columns.md").read_text(encoding="utf-8") == docs.columns_markdown()


def test_outputs_are_spelled_alike() -> None:
    """An output file is -o/--output, an output folder -d/--out-dir; the old --out is hidden."""
    for name, spelling in {"run": "-d, --out-dir", "plot": "-d, --out-dir", "graph": "-o, --output",
                           "compare": "-o, --output", "check": "-o, --output"}.items():  # fmt: skip
        text = invoke(name, "--help").output
        assert spelling in text, name
        assert "--out " not in text and "--out," not in text, name


def test_the_old_out_spelling_still_works(tmp_path: Path) -> None:
    run = make_run(n=10)
    write_run(tmp_path / "run", run.model_copy(update={"cases": run.cases[:1]}))  # figures drawn quickly
    out = tmp_path / "figures"
    result = invoke("plot", str(tmp_path / "run"), "--out", str(out), "-q", "--dpi", "30")
    assert result.exit_code == 0, result.output
    assert result.output == "" and (out / "speedup_vs_chain_length.png").exists()


def test_unknown_command_is_a_usage_error() -> None:
    result = invoke("nosuch")
    assert result.exit_code == 2 and "No such command" in result.output


def test_help_and_version_load_no_heavy_library() -> None:
    """`launchbench --help` and `--version` import neither the statistics, tables, models nor rich; the
    column declarations that `validate` checks expectations against load no NumPy and no results model."""
    code = (
        "import sys\n"
        "from launchbench.cli import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    sys.argv = ['launchbench', *args]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('loaded:', sorted(m for m in ('scipy', 'pandas', 'pydantic', 'rich', 'numpy', 'yaml') if m in sys.modules))\n"
        "import launchbench.analysis.columns\n"
        "print('columns:', sorted(m for m in ('numpy', 'pandas', 'launchbench.results.schema') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "loaded: []" in proc.stdout and "Commands:" in proc.stdout
    assert "columns: []" in proc.stdout


STATISTICS = ("scipy", "sklearn", "pandas", "rich", "matplotlib")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["compare", "{tmp}/no-such-run", "{tmp}/other"], "no-such-run: no such file"),
        (["compare", "{tmp}/only-one"], "give BASELINE and CURRENT"),
        (["compare", "{tmp}/a", "{tmp}/b", "--threshold", "five"], "threshold 'five': give a percentage"),
        (["compare", "{tmp}/a", "{tmp}/b", "--fail-on", "wall"], "--fail-on 'wall': expected METRIC:N%"),
        (["compare", "{tmp}/a", "{tmp}/b", "-o", "{tmp}/no-folder/out.csv"], "does not exist"),
        (["ab", "{tmp}/no-such.yaml"], "no-such.yaml: no such file"),
        (["ab", "scenarios/quickstart.yaml", "--threshold", "-3%"], "must be a non-negative percentage"),
        (["ab", "scenarios/quickstart.yaml", "--a", "python={tmp}/no-python"], "is not an executable file"),
    ],
)
def test_refused_compare_and_ab_answer_before_the_statistics_load(
    tmp_path: Path, args: list[str], said: str
) -> None:
    """A compare or ab given bad arguments or a missing input says so (exit 2, one line) before SciPy,
    scikit-learn, pandas or rich are imported: a refusal answers at once."""
    code = (
        "import sys\n"
        "from launchbench.cli import main\n"
        f"sys.argv = ['launchbench', *{[a.format(tmp=tmp_path) for a in args]!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit_:\n"
        "    print('exit:', exit_.code)\n"
        f"print('loaded:', sorted(m for m in {STATISTICS!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "exit: 2" in proc.stdout and "loaded: []" in proc.stdout, (proc.stdout, proc.stderr)
    assert said in proc.stderr and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------------- output in CI logs


def test_run_summary_cuts_no_cell_when_not_a_terminal(tmp_path: Path) -> None:
    from launchbench.report.console import print_summary
    from launchbench.report.terminal import make_console
    from launchbench.results.store import load_run

    record = load_run(H200 / "quickstart-a")
    out = io.StringIO()
    console = make_console(out)
    assert not console.is_terminal
    print_summary(console, record, tmp_path)
    text = out.getvalue()
    assert "…" not in text
    assert all(case.case_id in text for case in record.cases)
    narrow = io.StringIO()
    print_summary(Console(file=narrow, width=80), record, tmp_path)
    assert "…" in narrow.getvalue()  # what an 80-column console does to the same table


def test_compare_table_cuts_no_cell_in_a_log(tmp_path: Path) -> None:
    from launchbench.analysis.compare import CompareSettings, compare_runs
    from launchbench.analysis.gate import evaluate_rules, parse_rule
    from launchbench.report.compare_console import render_comparison

    write_run(tmp_path / "base", make_run(n=10))
    write_run(tmp_path / "cur", make_run(n=10, seed=1))
    result = invoke(
        "compare", str(tmp_path / "base"), str(tmp_path / "cur"), "--fail-on", "wall_us_per_launch:5%"
    )
    assert result.exit_code in (0, 1), result.output
    assert "…" not in result.output.replace(" … ", "")  # the CI column's own separator aside
    assert "PASS:" in result.output or "FAIL:" in result.output
    comparison = compare_runs(make_run(n=10), make_run(n=10, seed=1), CompareSettings())
    narrow = io.StringIO()
    render_comparison(
        Console(file=narrow, width=80),
        comparison,
        evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")]),
    )
    assert "…" in narrow.getvalue().replace(" … ", "")  # what an 80-column console does to the same table


def test_progress_prints_one_line_per_case_not_per_pass(tmp_path: Path) -> None:
    from launchbench.report.console import ConsoleEvents
    from launchbench.report.terminal import make_console
    from launchbench.run import runner

    plan = runner.plan([Path(__file__).parents[1] / "data" / "scripted" / "three.yaml"], Overrides(passes=3))
    out = io.StringIO()
    events = ConsoleEvents(make_console(out))
    options = runner.RunOptions(
        isolate=False, backend_factory=scripted_backend, overrides=Overrides(passes=3)
    )
    record = runner.run(plan, tmp_path / "run", options, events)
    events.close()
    finished = [line for line in out.getvalue().splitlines() if line.startswith(("✓", "✗"))]
    assert sorted(line.split()[2] for line in finished) == sorted(c.case_id for c in record.cases)
    assert all(c.passes_done == 3 for c in record.cases)


# ----------------------------------------------------------------------------------------- quiet


def test_quiet_check_prints_only_the_outcome(tmp_path: Path) -> None:
    result = invoke(
        "check", str(H200 / "quickstart-a"), "-s", str(ROOT / "scenarios" / "quickstart.yaml"), "-q"
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("PASS:") and len(result.output.splitlines()) == 1


def test_check_writes_csv(tmp_path: Path) -> None:
    import pandas as pd

    out = tmp_path / "checks.csv"
    result = invoke("check", str(H200 / "quickstart-a"), "-s", str(ROOT / "scenarios" / "quickstart.yaml"),
                    "--format", "csv", "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert len(frame) == 2 and frame["passed"].all() and (frame["metric"] == "wall_us_per_launch").all()
    assert list(frame.columns) == [
        "kind",
        "scenario",
        "case",
        "mode",
        "metric",
        "rule",
        "passed",
        "improved",
        "value",
        "message",
    ]


def test_quiet_validate_prints_nothing() -> None:
    result = invoke("validate", str(ROOT / "scenarios" / "quickstart.yaml"), "-q")
    assert result.exit_code == 0 and result.output == ""


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README's test command is .ci/run's commands joined by ' && '."""
    import re

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [
        line.strip() for line in ci.splitlines() if re.match(r"(python3? |\. |ruff |mypy )", line.strip())
    ]
    assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "python -m pip install -e '.[dev]'"]
    assert " && ".join(steps) in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_tells_no_history() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for word in (" was ", " used to ", "found in review", " now "):
        assert word not in readme, word


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("4", "4")])
def test_the_command_line_starts_numpy_with_one_blas_thread_unless_told(given: str | None, seen: str) -> None:
    """OpenBLAS reads OPENBLAS_NUM_THREADS as NumPy loads: the CLI sets it to 1 before any command imports
    NumPy, and keeps a value the user gave."""
    code = (
        "import os, sys; sys.argv = ['launchbench', '--version']\n"
        "from launchbench.cli import main\n"
        "try:\n    main()\nexcept SystemExit: pass\n"
        "import numpy\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == seen
