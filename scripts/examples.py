"""Write docs/examples/: what compare, check, history and env print, at 80 and 200 columns and piped
(a pipe or a CI log: no width limit, so no cell is cut), from the committed H200 runs.

    python scripts/examples.py
"""

from __future__ import annotations

import io
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "examples"
H200 = Path("tests/data/h200")
WIDTHS: tuple[int | None, ...] = (80, 200, None)  # None: piped


def _console(width: int | None) -> tuple[object, io.StringIO]:
    from rich.console import Console

    from launchbench.report.terminal import plain_console

    buffer = io.StringIO()
    if width is None:
        return plain_console(buffer), buffer
    return Console(
        file=buffer, width=width, color_system=None, highlight=False, soft_wrap=False, force_terminal=True
    ), buffer


def compare_example(width: int | None) -> str:
    from launchbench.analysis.compare import CompareSettings, compare_runs
    from launchbench.analysis.defaults import DEFAULT_METRICS
    from launchbench.analysis.gate import evaluate_rules, parse_rule
    from launchbench.report.compare_console import render_comparison
    from launchbench.results.store import load_run

    base, cur = H200 / "quickstart-a", H200 / "quickstart-longer"
    comparison = compare_runs(
        load_run(base), load_run(cur), CompareSettings(metrics=DEFAULT_METRICS), baseline_label=str(base),
        current_label=str(cur),
    )  # fmt: skip
    report = evaluate_rules(comparison, [parse_rule("gpu_us_per_iter:5%")], scope="gpu-bound")
    console, buffer = _console(width)
    render_comparison(console, comparison, report)  # type: ignore[arg-type]
    return buffer.getvalue()


def check_example(width: int | None) -> str:
    from launchbench.analysis.gate import check_against_scenarios
    from launchbench.report.compare_console import render_checks
    from launchbench.results.store import load_run

    report = check_against_scenarios(load_run(H200 / "quickstart-a"), ("scenarios/quickstart.yaml",))
    console, buffer = _console(width)
    render_checks(console, report)  # type: ignore[arg-type]
    return buffer.getvalue()


def history_examples(db: str) -> dict[str, Callable[[int | None], str]]:
    from launchbench.history.changes import detect_changes
    from launchbench.history.db import HistoryDB
    from launchbench.history.matching import RunFilter, list_runs
    from launchbench.report.history import CHANGE_COLUMNS, LIST_COLUMNS, change_records, render, run_records

    with HistoryDB(db) as opened:
        runs = list_runs(opened, RunFilter())
        found = detect_changes(opened, RunFilter(), ("gpu_us_per_iter",), threshold=0.05, alpha=0.01)
    return {
        "history-list": lambda w: render(run_records(runs), "table", f"{len(runs)} runs", LIST_COLUMNS, width=w),
        "history-changes": lambda w: render(
            change_records(found), "table", f"{len(found)} change points", CHANGE_COLUMNS, "changes", w
        ),
    }  # fmt: skip


def env_example() -> str:
    from click.testing import CliRunner

    from launchbench.cli import cli

    return CliRunner().invoke(cli, ["env"]).output


COMMIT = re.compile(r"\b[0-9a-f]{40}(-dirty)?\b")


def without_commits(text: str) -> str:
    """The text with git commit ids (a checkout's, or the ones the synthetic runs copy) shown as <commit>."""
    return COMMIT.sub("<commit>", text)


def write_examples(out: Path) -> None:
    """Every example but env's into ``out`` (run from the repository's root: the runs' paths are relative)."""
    sys.path.insert(0, str(ROOT / "tests" / "history"))
    from synth import STEPPED, series

    from launchbench.history.db import HistoryDB
    from launchbench.history.ingest import ingest_loaded, read_run_dir

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/history.sqlite"
        with HistoryDB(db) as opened:
            for run_dir in series(Path(tmp) / "runs", STEPPED):
                ingest_loaded(opened, read_run_dir(run_dir))
        examples = {"compare": compare_example, "check": check_example, **history_examples(db)}
        for name, make in examples.items():
            for width in WIDTHS:
                suffix = "piped" if width is None else f"{width}"
                text = without_commits(make(width).replace(tmp, "/tmp/history"))
                (out / f"{name}-{suffix}.txt").write_text(text, encoding="utf-8")


def main() -> int:
    import os

    os.chdir(ROOT)
    write_examples(OUT)
    (OUT / "env.txt").write_text(without_commits(env_example()), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
