"""compare's table: one line per case and mode, fitted to the width with no case, verdict or number cut;
detail and warnings in every output; -q without a gate; the environment items that put host-bound rows
in doubt."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from launchbench.analysis.compare import CompareSettings, Comparison, compare_runs
from launchbench.analysis.defaults import DEFAULT_METRICS
from launchbench.analysis.gate import evaluate_rules, parse_rule
from launchbench.cli import cli
from launchbench.report.compare_console import (
    LAYOUTS,
    fitted_table,
    render_comparison,
    text_measurement,
    verdict_table,
)
from launchbench.report.comparison_table import row_lines
from launchbench.report.junit import comparison_junit
from launchbench.report.markdown import comparison_markdown
from launchbench.report.terminal import rendered
from launchbench.results.metadata import Environment
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, write_run

H200 = Path(__file__).parents[1] / "data" / "h200"
VERDICT_WORDS = ("slower", "faster", "uncertain", "same", "missing", "failed")


@pytest.fixture(scope="module")
def longer() -> Comparison:
    """Chains 10% longer: every row has a detail (launches per iteration differ)."""
    settings = CompareSettings(metrics=DEFAULT_METRICS)
    return compare_runs(
        load_run(H200 / "quickstart-a"),
        load_run(H200 / "quickstart-longer"),
        settings,
        baseline_label=str(H200 / "quickstart-a"),
        current_label=str(H200 / "quickstart-longer"),
    )


def table_text(comparison: Comparison, width: int, gated: bool = False) -> tuple[str, object]:
    report = evaluate_rules(comparison, [parse_rule("gpu_us_per_iter:5%")]) if gated else None
    console = Console(file=io.StringIO(), width=width, color_system=None)
    fitted = fitted_table(console, comparison, report)
    with console.capture() as captured:
        console.print(fitted.segments)
    return captured.get(), fitted.layout


@pytest.mark.parametrize("gated", [False, True])
def test_at_80_columns_no_case_verdict_or_number_is_cut(longer: Comparison, gated: bool) -> None:
    text, layout = table_text(longer, 80, gated)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for row in longer.rows:
        assert re.search(rf"(^|\s|/){re.escape(row.case)}\s", text), row.case
        for mc in row.metrics:
            assert f"{mc.change * 100:+.1f}%" in text and mc.verdict in text
    assert layout != LAYOUTS[0]  # something was dropped to fit


@pytest.mark.parametrize(
    ("gated", "width"),
    [
        (False, 80),
        (False, 90),
        (False, 98),
        (False, 120),
        (False, 170),
        (False, 190),
        (True, 100),
        (True, 250),
    ],
)
def test_the_layout_tried_on_its_widest_rows_is_the_first_whose_whole_table_fits(
    longer: Comparison, gated: bool, width: int
) -> None:
    """fitted_table tries a layout on its widest rows only, and lays out whole only the one it takes: that
    is the first layout whose whole table fits (every wider one, laid out whole, cuts a cell), and what
    it prints is that whole table; a layout's widest rows fit exactly where its whole table does. The
    widths span every layout of this comparison."""
    report = evaluate_rules(longer, [parse_rule("gpu_us_per_iter:5%")]) if gated else None
    console = Console(file=io.StringIO(), width=width, color_system=None)
    fitted = fitted_table(console, longer, report)
    lines = row_lines(longer, report)
    index = LAYOUTS.index(fitted.layout)
    for layout in LAYOUTS[: index + 1]:
        parts = verdict_table(longer, report, layout, lines)
        whole = rendered(console, parts.table())
        widest = parts.widest_rows(text_measurement)
        assert len(widest) < len(parts.rows)
        assert rendered(console, parts.table(widest)).fits == whole.fits == (layout == fitted.layout), layout
    printed = ["".join(s.text for s in segments.segments) for segments in (whole.segments, fitted.segments)]
    assert printed[0] == printed[1]  # the text rich lays out (fitted's may be plain_table's segments)


def test_wide_terminal_shows_ci_p_mde_and_the_detail(longer: Comparison) -> None:
    text, layout = table_text(longer, 400)
    assert layout == LAYOUTS[0]
    assert all(header in text for header in ("95% CI", "MDE", "detail", "wall µs/launch", "gpu µs/iter"))
    assert "launches per iteration differ: 1 → 2" in text
    rows = [line for line in text.splitlines() if "quickstart/" in line]
    assert len(rows) == len(longer.rows)  # one line per case and mode


def test_the_detail_is_said_where_the_width_moves_it_under_the_table(longer: Comparison) -> None:
    buffer = io.StringIO()
    render_comparison(Console(file=buffer, width=80, color_system=None), longer, None)
    assert (
        "detail: quickstart/empty/length=1 [eager]: launches per iteration differ: 1 → 2" in buffer.getvalue()
    )


def _scenario_changed(run: RunRecord) -> RunRecord:
    scenarios = [s.model_copy(update={"sha256": "f" * 64}) for s in run.scenarios]
    return run.model_copy(update={"scenarios": scenarios})


def test_warnings_and_detail_reach_every_output(tmp_path: Path) -> None:
    base = load_run(H200 / "quickstart-a")
    write_run(tmp_path / "cur", _scenario_changed(load_run(H200 / "quickstart-longer")))
    runner = CliRunner()
    args = ["compare", str(H200 / "quickstart-a"), str(tmp_path / "cur")]
    assert base.scenarios and base.scenarios[0].sha256 != "f" * 64
    as_json = json.loads(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    assert any("different file contents" in w for w in as_json["warnings"])
    markdown = runner.invoke(cli, [*args, "--format", "markdown"]).stdout
    assert "different file contents" in markdown and "launches per iteration differ: 1 → 2" in markdown
    junit = tmp_path / "c.xml"
    runner.invoke(cli, [*args, "--junit", str(junit), "-q"])
    xml = junit.read_text(encoding="utf-8")
    assert "different file contents" in xml and "launches per iteration differ" in xml
    table = runner.invoke(cli, args).stdout
    assert "warning: scenario 'quickstart' ran from different file contents" in table


def test_quiet_without_a_gate_prints_the_verdict_counts() -> None:
    result = CliRunner().invoke(
        cli, ["compare", str(H200 / "quickstart-a"), str(H200 / "quickstart-longer"), "-q"]
    )
    assert result.exit_code == 0
    line = result.stdout.strip()
    assert line.startswith("verdicts (row × metric): slower ") and "no gate rules given" in line
    counts = dict(re.findall(r"(\w+) (\d+)", line.split(":", 1)[1].split(";")[0]))
    assert sum(map(int, counts.values())) == 16 * len(DEFAULT_METRICS)


@pytest.mark.parametrize(
    ("path", "value", "label"),
    [(("python",), "3.99.0", "Python"), (("host", "cpu"), "Other CPU", "CPU model"),
     (("cuda_bindings",), "12.0.0", "cuda-bindings")],
)  # fmt: skip
def test_a_host_item_that_differs_puts_host_bound_rows_in_doubt(
    path: tuple[str, ...], value: str, label: str
) -> None:
    base = load_run(H200 / "quickstart-a")
    env = base.environment.model_dump()
    node = env
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    current = base.model_copy(update={"environment": Environment.model_validate(env)})
    comparison = compare_runs(base, current, CompareSettings(metrics=DEFAULT_METRICS))
    assert label in {d.item for d in comparison.env_differences}
    doubt = comparison.host_doubt
    host_bound = [r for r in comparison.rows if r.host_bound]
    assert host_bound and f"the {len(host_bound)} host-bound rows" in doubt and label in doubt
    assert doubt in comparison_markdown(comparison) and doubt in comparison_junit(comparison)
    assert compare_runs(base, base, CompareSettings(metrics=DEFAULT_METRICS)).host_doubt == ""


EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("name", ["compare", "check", "history-list", "history-changes"])
def test_the_committed_examples_fit_with_no_cell_cut(name: str) -> None:
    """docs/examples/ (python scripts/examples.py): at 80 and 200 columns and piped, nothing cut."""
    for suffix, width in (("80", 80), ("200", 200), ("piped", None)):
        text = (EXAMPLES / f"{name}-{suffix}.txt").read_text(encoding="utf-8")
        assert "…" not in re.sub("[0-9a-f]{12}…", "", text), (name, suffix)  # a note shortens a digest so
        if width is not None:
            assert max(len(line) for line in text.splitlines()) <= width, (name, suffix)


def test_the_examples_are_what_the_commands_print_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/examples/ (compare, check, history list and changes; env's depends on the machine) are what
    scripts/examples.py writes today: a change to what they print, or to the scenario check reads,
    regenerates them (python scripts/examples.py)."""
    monkeypatch.syspath_prepend(str(EXAMPLES.parent.parent / "scripts"))
    monkeypatch.chdir(EXAMPLES.parent.parent)
    import examples

    examples.write_examples(tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 12
    for name in written:
        assert (tmp_path / name).read_text(encoding="utf-8") == (EXAMPLES / name).read_text(
            encoding="utf-8"
        ), name


def test_compare_one_baseline_against_several_runs(tmp_path: Path) -> None:
    """compare A B C: B and C side by side against A, each pair gated on its own, the worst exit code."""
    from jsonschema import Draft202012Validator

    runs = [str(H200 / name) for name in ("quickstart-a", "quickstart-b", "quickstart-longer")]
    runner = CliRunner()
    gate = ["--fail-on", "gpu_us_per_iter:5%", "--gate-rows", "gpu-bound", "--allow-blind"]
    table = runner.invoke(cli, ["compare", *runs, *gate])
    assert table.exit_code == 1, table.output  # the longer chains are slower on the GPU
    assert "gpu µs/iter (1)" in table.stdout and "gpu µs/iter (2)" in table.stdout
    assert table.stdout.count("PASS: no regression") == 1 and "FAIL: 7 regressions" in table.stdout
    same = runner.invoke(cli, ["compare", runs[0], runs[1], *gate])
    assert same.exit_code == 0  # the A/A pair alone passes
    document = json.loads(runner.invoke(cli, ["compare", *runs, "--format", "json", *gate]).stdout)
    schema = json.loads((EXAMPLES.parent / "schemas" / "comparison-series.schema.json").read_text("utf-8"))
    assert not list(Draft202012Validator(schema).iter_errors(document))
    assert [c["current"]["source"] for c in document["comparisons"]] == runs[1:]
    assert [c["gate"]["passed"] for c in document["comparisons"]] == [True, False]
    csv = runner.invoke(cli, ["compare", *runs, "--format", "csv"]).stdout.splitlines()
    assert csv[0].startswith("current,scenario,case,mode,metric") and len(csv) == 1 + 2 * 16 * 3
    junit = tmp_path / "c.xml"
    runner.invoke(cli, ["compare", *runs, *gate, "--junit", str(junit), "-q"])
    xml = junit.read_text(encoding="utf-8")
    assert xml.count("<testsuite ") == 2 and 'failures="7"' in xml
    assert runner.invoke(cli, ["compare", runs[0]]).exit_code == 2


def test_the_export_registry_holds_the_five_formats_and_format_offers_four() -> None:
    from launchbench.report.export import EXPORTERS, REPORT_FORMATS, Option, exporter

    assert list(EXPORTERS) == ["table", "markdown", "csv", "json", "junit"]
    assert REPORT_FORMATS == ("table", "markdown", "csv", "json")
    assert EXPORTERS["junit"].option is Option.JUNIT
    for fmt in EXPORTERS:
        chosen = exporter(fmt)
        for method in ("comparison", "series", "check", "devices"):
            assert callable(getattr(chosen, method)), (fmt, method)


def test_export_writes_each_format_as_its_renderer_does(longer: Comparison) -> None:
    from launchbench.report.compare_console import render_text
    from launchbench.report.export import Compared, Series, export, outcome
    from launchbench.report.tables import comparison_csv, comparison_json

    report = evaluate_rules(longer, [parse_rule("gpu_us_per_iter:5%")])
    subject = Compared(longer, report)
    assert export("markdown", subject) == comparison_markdown(longer, report)
    assert export("markdown", subject, max_rows=1) == comparison_markdown(longer, report, max_rows=1)
    assert export("csv", subject) == comparison_csv(longer, report)
    assert export("json", subject) == comparison_json(longer, report)
    assert export("junit", subject) == comparison_junit(longer, report)
    assert export("table", subject) == render_text(lambda console: render_comparison(console, longer, report))
    assert outcome(subject).startswith(("PASS", "FAIL"))
    assert export("csv", Series([(longer, report)])).startswith("current,")


def test_a_format_is_one_module_and_one_registry_entry(
    longer: Comparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A toy format: a module defining EXPORTER, entered in the registry, is what export() writes."""
    import sys
    import types

    from launchbench.report import export as registry

    class Rows:
        def comparison(self, subject: registry.Compared, max_rows: int | None) -> str:
            return f"{len(subject.comparison.rows)} rows\n"

        series = check = devices = comparison

    module = types.ModuleType("toy_rows_format")
    module.EXPORTER = Rows()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_rows_format", module)
    entry = registry.Entry("toy_rows_format", registry.Option.FORMAT)
    monkeypatch.setitem(registry.EXPORTERS, "rows", entry)
    assert registry.export("rows", registry.Compared(longer, None)) == f"{len(longer.rows)} rows\n"


def test_the_csv_is_the_text_pandas_writes_for_the_same_table(longer: Comparison) -> None:
    """compare's CSV (the csv module, no pandas loaded) against pandas' to_csv of the same long table:
    a gated comparison with a detail in every row, and one with rows missing on either side and a
    failed row, whose numbers are NaN (empty cells) and whose details hold commas and quotes."""
    from launchbench.report.tables import comparison_csv, comparison_frame

    baseline, current = load_run(H200 / "quickstart-a"), load_run(H200 / "quickstart-b")
    broken = current.cases[1].model_copy(
        update={
            "modes": {
                m: r.model_copy(update={"status": "error", "reason": 'says "no", twice'})
                for m, r in current.cases[1].modes.items()
            }
        }
    )
    gaps = compare_runs(
        baseline.model_copy(update={"cases": baseline.cases[:-1]}),
        current.model_copy(update={"cases": [current.cases[0], broken, *current.cases[3:]]}),
        CompareSettings(metrics=DEFAULT_METRICS),
    )
    verdicts = {mc.verdict for row in gaps.rows for mc in row.metrics}
    assert {"missing", "failed"} <= verdicts, verdicts
    for comparison, report in (
        (longer, evaluate_rules(longer, [parse_rule("gpu_us_per_iter:5%")])),
        (gaps, None),
    ):
        text = comparison_csv(comparison, report)
        assert text == comparison_frame(comparison, report).to_csv(index=False)
        assert text.count("\n") == 1 + sum(len(row.metrics) for row in comparison.rows)


def test_compare_to_csv_loads_neither_pandas_nor_scipy_optimize(tmp_path: Path) -> None:
    """The two imports compare's CSV went without (docs/performance.md), checked in a fresh interpreter,
    which imports what the command needs only: two runs as ``launchbench run`` writes them (their host
    levels' splits kept, so no mixture fit is made, which would load scikit-learn)."""
    import subprocess
    import sys

    heavy = ("pandas", "scipy.optimize", "scipy.stats", "sklearn", "matplotlib")
    for name in ("quickstart-a", "quickstart-b"):
        (tmp_path / name).mkdir()
        write_run(tmp_path / name, load_run(H200 / name))
    out = tmp_path / "c.csv"
    code = (
        "import sys\n"
        "from launchbench.cli import main\n"
        f"sys.argv = ['launchbench', 'compare', {str(tmp_path / 'quickstart-a')!r}, {str(tmp_path / 'quickstart-b')!r}, "
        f"'--format', 'csv', '-o', {str(out)!r}, '--fail-on', 'gpu_us_per_iter:5%']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, 1), exit.code\n"
        f"print('loaded:', sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "loaded: []" in proc.stdout, proc.stdout
    assert out.read_text().startswith("scenario,case,mode,metric,")
