"""The history as one HTML page a person explores, with no server and no network: the page's data
(report.history_page) embedded once as JSON, drawn in the browser by uPlot (vendored under
assets/uplot/ with its MIT license, embedded once), laid out by a Jinja2 template: a contents list, the
change points, a section per scenario (a chart per row measured in two runs or more, on the runs' start
times; a table of the rows measured in one run), the runs with links to their directories. Filters on
the environment, the scenario and the dates pick runs, and every chart, band, axis, change point, table
and count is drawn again from those runs. The page opens from the filesystem and works as a CI artifact.
"""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from launchbench.files import atomic_write_text, check_output_dir
from launchbench.history.db import HistoryDB
from launchbench.history.matching import ALL_RUNS, RunFilter
from launchbench.history.tables import ENV_COLUMN_LABELS
from launchbench.report.history_page import RUN_COLUMNS, PageData, build_page

INDEX = "index.html"
TEMPLATE = "history.html.j2"


def _asset(*parts: str) -> Markup:
    """An asset's text, inserted as it is (none holds ``</script``)."""
    return Markup(resources.files("launchbench.report").joinpath("assets", *parts).read_text("utf-8"))


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}"


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).date().isoformat()


def render_page(page: PageData) -> str:
    """The page as HTML: the template filled with the page's data, uPlot and the page's script and style."""
    env = Environment(
        loader=PackageLoader("launchbench.report", "templates"), autoescape=True, undefined=StrictUndefined
    )
    data_json = page.model_dump_json().replace("<", "\\u003c")  # no "</script" inside the JSON
    return env.get_template(TEMPLATE).render(
        page=page,
        data_json=Markup(data_json),
        uplot_js=_asset("uplot", "uPlot.iife.min.js"),
        uplot_css=_asset("uplot", "uPlot.min.css"),
        page_js=_asset("history.js"),
        page_css=_asset("history.css"),
        run_columns=RUN_COLUMNS,
        labels=ENV_COLUMN_LABELS,
        first_day=_day(page.runs[0].t) if page.runs else "",
        last_day=_day(page.runs[-1].t) if page.runs else "",
        num=_num,
        pct=_pct,
    )


def write_report(
    db: HistoryDB, out_dir: Path, metric: str = "wall_us_per_launch", filters: RunFilter = ALL_RUNS
) -> Path:
    """Write ``out_dir/index.html`` (atomically; the folder is created) and return its path."""
    out_dir = check_output_dir(out_dir, "--out-dir")
    out_dir.mkdir(parents=True, exist_ok=True)
    page = build_page(db, out_dir, metric, filters)
    path = out_dir / INDEX
    atomic_write_text(path, render_page(page), "--out-dir")
    return path
