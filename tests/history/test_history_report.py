"""The HTML report, opened in a real headless Chromium (Debian's chromium package): the page loads with
no console errors and every plot is laid out with a size (the page's script counts them)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from launchbench.history.db import HistoryDB
from launchbench.history.ingest import ingest_run_dir
from launchbench.report.history_html import write_report

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but chromium is not installed (apt-get install chromium chromium-driver)")
        pytest.skip("no chromium on PATH (apt-get install chromium chromium-driver)")
    return found


def load(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and the console messages Chromium logged."""
    result = subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return result.stdout, console


def test_console_errors_are_seen(tmp_path: Path) -> None:
    """The check itself: a page whose script throws is reported."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    _, console = load(page, tmp_path)
    assert any("undefinedFunction" in line for line in console)


def test_report_loads_without_errors_and_shows_plots(tmp_path: Path, stepped: list[Path]) -> None:
    with HistoryDB(f"sqlite:///{tmp_path / 'h.sqlite'}") as db:
        for run in stepped:
            ingest_run_dir(db, run)
        page = write_report(db, tmp_path / "report")
    text = page.read_text()
    assert "driver 580.159.04 → 590.10.01" in text
    assert f'href="{Path(os.path.relpath(stepped[0], page.parent)).as_posix()}"' in text
    dom, console = load(page, tmp_path)
    assert console == []
    plots = len(re.findall(r'<figure class="plot">', text))
    assert plots == 16
    assert f'data-plots-visible="{plots}"' in dom
    assert "12 of 12 runs shown" in dom


def test_report_shows_each_runs_clock_load_and_throttling(db_url: str, tmp_path: Path) -> None:
    """The runs table gives what the passes recorded: the H200 v2 run's SM clock (1980 MHz in every
    reading) and its host load; a run without clock readings shows a dash."""
    repo = Path(__file__).resolve().parents[2]
    with HistoryDB(db_url) as db:
        ingest_run_dir(db, repo / "results" / "quickstart-h200-v2")
        ingest_run_dir(db, repo / "results" / "quickstart-h200")
        text = write_report(db, tmp_path / "report").read_text()
    rows = re.findall(r'<tr data-run="\d+">.*?</tr>', text)
    assert len(rows) == 2
    v2 = next(r for r in rows if "quickstart-h200-v2" in r)
    v1 = next(r for r in rows if "quickstart-h200<" in r)
    assert re.search(r"<td>1980</td><td>\d\.\d\d</td><td>0</td></tr>", v2), v2
    assert v1.endswith("<td>—</td><td>—</td><td>0</td></tr>"), v1
