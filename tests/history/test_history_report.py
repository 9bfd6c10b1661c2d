"""The HTML report, opened in a real headless Chromium (Debian's chromium and chromium-driver packages):
the page loads with no console errors and draws every chart; choosing a filter value changes the points
each chart draws, its axis range, the change points shown and the count of runs shown (driven through
chromedriver with selenium); rows measured in one run are a table; the runs table gives each run's
clock, load and throttling."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from synth import START

from launchbench.history.db import HistoryDB
from launchbench.history.ingest import ingest_run_dir
from launchbench.report.history_html import write_report

REPO = Path(__file__).resolve().parents[2]
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def _installed(name: str, *names: str) -> str:
    found = next((p for p in map(shutil.which, (name, *names)) if p is not None), None)
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {name} is not installed (apt-get install chromium chromium-driver)")
        pytest.skip(f"no {name} on PATH (apt-get install chromium chromium-driver)")
    return found


def chromium() -> str:
    return _installed("chromium", "chromium-browser")


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


@pytest.fixture(scope="module")
def chromium_driven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium driven by chromedriver (selenium), headless: one browser for the tests of this module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-driven')}")
    options.add_argument("--window-size=1300,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(_installed("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture()
def browser(chromium_driven: Any) -> Any:
    """The module's browser on a blank page, its console log read empty: what a test sees and logs is
    its own page's."""
    chromium_driven.get("about:blank")
    chromium_driven.get_log("browser")
    return chromium_driven


@pytest.fixture(scope="module")
def stepped_page(tmp_path_factory: pytest.TempPathFactory, stepped: list[Path]) -> Path:
    """The report of the stepped runs, written once for the tests that read it (none changes it)."""
    folder = tmp_path_factory.mktemp("stepped_page")
    with HistoryDB(f"sqlite:///{folder / 'h.sqlite'}") as db:
        for run in stepped:
            ingest_run_dir(db, run)
        return write_report(db, folder / "report")


def test_console_errors_are_seen(tmp_path: Path) -> None:
    """The check itself: a page whose script throws is reported."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    _, console = load(page, tmp_path)
    assert any("undefinedFunction" in line for line in console)


def test_report_loads_without_errors_and_draws_every_chart(
    tmp_path: Path, stepped: list[Path], stepped_page: Path
) -> None:
    text = stepped_page.read_text()
    assert "driver 580.159.04 → 590.10.01" in text
    assert f'href="{Path(os.path.relpath(stepped[0], stepped_page.parent)).as_posix()}"' in text
    assert text.count("uPlot=function") == 1  # the runtime embedded once
    dom, console = load(stepped_page, tmp_path)
    assert console == []
    drawn = [int(n) for n in re.findall(r'<figure class="chart"[^>]*data-points="(\d+)"', dom)]
    assert drawn == [12] * 16  # 16 rows of the quickstart scenario, each over the 12 runs
    assert dom.count('class="uplot') == 16  # each chart drawn by uPlot
    assert 'data-points-drawn="192"' in dom
    assert "12 of 12 runs shown" in dom
    assert "<h2>Contents</h2>" in dom and '<a href="#scenario-1">quickstart</a>' in dom


def _no_errors(driver: Any) -> None:
    """Nothing the page's scripts did while the test drove it raised an error."""
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def _figures(driver: Any) -> list[dict[str, Any]]:
    """What each chart draws: its points as uPlot holds them, the x range, and the figure's own count."""
    return list(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('figure.chart')).map(f => ({"
            "points: f.uplot.data[0].length, xmin: f.uplot.scales.x.min, xmax: f.uplot.scales.x.max,"
            "said: Number(f.dataset.points), hidden: f.hidden}))"
        )
    )


def _wait_for(driver: Any, condition: Any, seconds: float = 5.0) -> None:
    """Until ``condition()`` holds (the page redraws on a timer after some events), at most ``seconds``."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, seconds).until(lambda _driver: condition())


def _choose(driver: Any, css: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.CSS_SELECTOR, css)).select_by_visible_text(value)


def test_choosing_a_filter_value_redraws_points_axes_change_points_and_count(
    browser: Any, stepped_page: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(stepped_page.resolve().as_uri())
    shown = browser.find_element(By.ID, "shown")
    assert shown.text == "12 of 12 runs shown"
    before = _figures(browser)
    assert [f["points"] for f in before] == [12] * 16
    changes = int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-changes-shown"))
    assert changes >= 6  # the graph rows' step at run 7
    assert (
        len([r for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-change]") if r.is_displayed()])
        == changes
    )

    _choose(browser, 'select[data-filter="driver"]', "590.10.01")  # runs 7–12
    assert shown.text == "6 of 12 runs shown"
    after = _figures(browser)
    assert [(f["points"], f["said"]) for f in after] == [(6, 6)] * 16
    day = 86400
    for old, new in zip(before, after):
        assert new["xmin"] >= old["xmin"] + 5 * day  # the time axis starts at run 7 now
    body = browser.find_element(By.TAG_NAME, "body")
    assert body.get_attribute("data-points-drawn") == "96"
    assert body.get_attribute("data-changes-shown") == "0"  # run 6, before each step, is filtered out
    assert not [r for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-change]") if r.is_displayed()]
    assert "0 of" in browser.find_element(By.ID, "changes-note").text
    assert (
        len(
            [r for r in browser.find_elements(By.CSS_SELECTOR, "table.runs tr[data-run]") if r.is_displayed()]
        )
        == 6
    )

    _choose(browser, 'select[data-filter="driver"]', "all")
    until = browser.find_element(By.ID, "to")
    browser.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change', {bubbles: true}))",
        until,
        (START + timedelta(days=3)).date().isoformat(),
    )
    assert shown.text == "3 of 12 runs shown"  # runs 1–3, a day apart
    assert [f["points"] for f in _figures(browser)] == [3] * 16
    browser.find_element(By.CSS_SELECTOR, 'button[type="reset"]').click()
    _wait_for(browser, lambda: shown.text == "12 of 12 runs shown")  # the page redraws after the reset event
    assert [f["points"] for f in _figures(browser)] == [12] * 16
    _no_errors(browser)


def test_rows_of_one_run_are_a_table_and_scenarios_sections(
    browser: Any, db_url: str, tmp_path: Path
) -> None:
    """Two quickstart runs give charts; the tiny-kernels run's rows, measured once, are its section's table;
    with no change points the page says so instead of drawing an empty table; the scenario filter keeps
    one section and the runs that measured it."""
    from selenium.webdriver.common.by import By

    with HistoryDB(db_url) as db:
        for name in ("quickstart-h200", "quickstart-h200-b", "tiny-kernels-h200"):
            ingest_run_dir(db, REPO / "results" / name)
        page = write_report(db, tmp_path / "report")
    text = page.read_text()
    assert "No change points were found in these runs" in text and 'class="changes"' not in text
    browser.get(page.resolve().as_uri())
    sections = browser.find_elements(By.CSS_SELECTOR, "section.scenario")
    assert [s.get_attribute("data-scenario") for s in sections] == ["quickstart", "tiny_kernels"]
    quickstart, tiny = sections
    assert len(quickstart.find_elements(By.CSS_SELECTOR, "figure.chart")) == 16
    assert not tiny.find_elements(By.CSS_SELECTOR, "figure.chart")
    singles = tiny.find_elements(By.CSS_SELECTOR, "table.singles tr[data-run]")
    assert len(singles) > 10 and all("tiny-kernels-h200" in r.text for r in singles)
    _choose(browser, "#scenario-filter", "tiny_kernels")
    assert browser.find_element(By.ID, "shown").text == "1 of 3 runs shown"
    assert not quickstart.is_displayed() and tiny.is_displayed()
    _no_errors(browser)


def test_report_shows_each_runs_clock_load_and_throttling(db_url: str, tmp_path: Path) -> None:
    """The runs table gives what the passes recorded: the H200 v2 run's SM clock (1980 MHz in every
    reading) and its host load; a run without clock readings shows a dash."""
    with HistoryDB(db_url) as db:
        ingest_run_dir(db, REPO / "results" / "quickstart-h200-v2")
        ingest_run_dir(db, REPO / "results" / "quickstart-h200")
        text = write_report(db, tmp_path / "report").read_text()
    table = text[text.index('<table class="runs">') :]
    rows = re.findall(r'<tr data-run="\d+">.*?</tr>', table, re.S)
    assert len(rows) == 2
    v2 = next(r for r in rows if "quickstart-h200-v2" in r)
    v1 = next(r for r in rows if "quickstart-h200<" in r)
    assert re.search(r"<td>1980</td><td>\d\.\d\d</td><td>0</td></tr>", v2), v2
    assert v1.endswith("<td>—</td><td>—</td><td>0</td></tr>"), v1
