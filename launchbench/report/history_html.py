"""The history as one static HTML page: a trend plot per scenario/case/mode (the run medians with their
95% CI as a band), change points marked and labelled with the step and what changed in the environment,
filters on the environment (plain JavaScript, no server, no network), and links to the run directories
with each run's SM clock, host load and throttled samples as its passes recorded them.

Plots are inline SVG drawn by matplotlib; each run's marker is an SVG group whose id names the run, so
the filters can hide a run's points. The page opens from the filesystem and works as a CI artifact.
"""

from __future__ import annotations

import html
import io
import json
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from launchbench.files import atomic_write_text, check_output_dir  # noqa: E402
from launchbench.history.changes import ChangePoint, detect_changes  # noqa: E402
from launchbench.history.db import HistoryDB  # noqa: E402
from launchbench.history.query import (  # noqa: E402
    ALL_RUNS,
    RowKey,
    RunConditions,
    RunFilter,
    RunInfo,
    TrendPoint,
    list_runs,
    row_keys,
    run_conditions,
    trend,
)
from launchbench.history.tables import ENV_COLUMN_LABELS  # noqa: E402
from launchbench.results.schema import METRIC_BY_NAME  # noqa: E402

FILTER_COLUMNS = ("gpu_name", "driver", "cupy", "cuda_runtime", "git_branch", "host")
INDEX = "index.html"


def _svg(key: RowKey, metric: str, points: list[TrendPoint], changes: list[ChangePoint], plot: int) -> str:
    unit = "µs" if metric.endswith(("_us", "_per_launch", "_per_iter")) else ""
    fig = Figure(figsize=(6.4, 2.8))
    ax = fig.add_subplot()
    xs = list(range(len(points)))
    ax.fill_between(
        xs,
        [p.ci_low for p in points],
        [p.ci_high for p in points],
        color="tab:blue",
        alpha=0.2,
        linewidth=0,
        label="95% CI",
    )
    ax.plot(xs, [p.median for p in points], color="tab:blue", linewidth=1, alpha=0.6)
    for x, p in zip(xs, points):
        ax.plot([x], [p.median], "o", color="tab:blue", markersize=3.5, gid=f"pt-{plot}-{p.run.id}")
    index = {p.run.id: i for i, p in enumerate(points)}
    top: float = max(p.ci_high for p in points) if points else 1.0
    for change in changes:
        if change.after.id not in index:
            continue
        x_step = index[change.after.id] - 0.5
        ax.axvline(x_step, color="tab:red", linestyle="--", linewidth=1)
        label = (
            f"{100 * change.step:+.1f}% [{100 * change.step_ci_low:+.1f}, {100 * change.step_ci_high:+.1f}]"
        )
        if change.env_changes:
            label += "\n" + change.explanation
        ax.annotate(
            label,
            (x_step, top),
            xytext=(3, -2),
            textcoords="offset points",
            fontsize=7,
            color="tab:red",
            va="top",
        )
    ticks = xs if len(xs) <= 12 else xs[:: max(1, len(xs) // 12)]
    ax.set_xticks(
        ticks,
        [points[i].run.started.strftime("%m-%d %H:%M") for i in ticks],
        fontsize=7,
        rotation=30,
        ha="right",
    )
    ax.set_ylabel(f"{metric}" + (f" ({unit})" if unit else ""), fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(f"{key[0]}/{key[1]} [{key[2]}]", fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text: a smaller page
        fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg") :]


_SCRIPT = """
(function () {
  var runs = JSON.parse(document.getElementById('runs-data').textContent);
  var selects = document.querySelectorAll('select[data-column]');
  function apply() {
    var shown = {};
    var count = 0;
    runs.forEach(function (run) {
      var ok = true;
      selects.forEach(function (s) { if (s.value !== '' && String(run[s.dataset.column]) !== s.value) { ok = false; } });
      shown[run.run_id] = ok;
      if (ok) { count += 1; }
    });
    document.querySelectorAll('g[id^="pt-"]').forEach(function (g) {
      var id = g.id.split('-')[2];
      g.style.display = shown[id] ? '' : 'none';
    });
    document.querySelectorAll('tr[data-run]').forEach(function (tr) {
      tr.style.display = shown[tr.dataset.run] ? '' : 'none';
    });
    document.getElementById('shown').textContent = count + ' of ' + runs.length + ' runs shown';
  }
  selects.forEach(function (s) { s.addEventListener('change', apply); });
  apply();
  var visible = 0;
  document.querySelectorAll('figure.plot svg').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) { visible += 1; }
  });
  document.body.dataset.plotsVisible = String(visible);
})();
"""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
figure.plot { display: inline-block; margin: 0.5em; border: 1px solid #ddd; }
figure.plot svg { width: 600px; height: auto; }
.filters label { margin-right: 1em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
.changes td { color: #a00; }
"""


def _rel(path: str, out_dir: Path) -> str:
    try:
        return Path(os.path.relpath(path, out_dir.resolve())).as_posix()
    except ValueError:  # another drive
        return Path(path).as_uri()


def _shown(value: object) -> str:
    """An environment value as the page shows it (and filters on it): a dash when unknown."""
    return "—" if value is None else str(value)


def render_page(
    db_label: str,
    metric: str,
    runs: list[RunInfo],
    plots: list[str],
    changes: list[ChangePoint],
    out_dir: Path,
    conditions: dict[int, RunConditions] | None = None,
) -> str:
    e = html.escape
    conditions = conditions or {}

    def measured(run_id: int) -> str:
        c = conditions.get(run_id)
        if c is None:
            return "<td>—</td><td>—</td><td>—</td>"
        cells = (
            f"{c.sm_mhz:.0f}" if c.sm_mhz is not None else "—",
            f"{c.load_1m:.2f}" if c.load_1m is not None else "—",
            str(c.throttled_samples),
        )
        return "".join(f"<td>{cell}</td>" for cell in cells)

    options = []
    for column in FILTER_COLUMNS:
        values = sorted({_shown(r.env[column]) for r in runs})
        choices = "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)
        options.append(
            f'<label>{e(ENV_COLUMN_LABELS[column])} <select data-column="{column}"><option value="">all</option>{choices}</select></label>'
        )
    run_rows = "".join(
        f'<tr data-run="{r.id}"><td>{r.id}</td><td><a href="{e(_rel(r.run_dir, out_dir))}">{e(r.name)}</a></td>'
        f"<td>{e(r.started.isoformat())}</td>"
        + "".join(f"<td>{e(_shown(r.env[c]))}</td>" for c in (*FILTER_COLUMNS, "git_commit"))
        + measured(r.id)
        + "</tr>"
        for r in runs
    )
    change_rows = "".join(
        f"<tr><td>{e(c.scenario)}/{e(c.case)} [{e(c.mode)}]</td><td>{e(c.metric)}</td><td>{e(c.before.name)} → {e(c.after.name)}</td>"
        f"<td>{100 * c.step:+.1f}% [{100 * c.step_ci_low:+.1f}, {100 * c.step_ci_high:+.1f}]</td><td>{e(c.explanation or '—')}</td></tr>"
        for c in changes
    )
    runs_json = json.dumps(
        [{"run_id": r.id, **{c: _shown(r.env[c]) for c in FILTER_COLUMNS}} for r in runs]
    ).replace("</", "<\\/")
    header = "".join(f"<th>{e(ENV_COLUMN_LABELS[c])}</th>" for c in (*FILTER_COLUMNS, "git_commit"))
    header += "<th>SM clock (MHz)</th><th>load (1 min)</th><th>throttled samples</th>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>launchbench history</title>
<link rel="icon" href="data:,"><style>{_STYLE}</style></head>
<body>
<h1>launchbench history</h1>
<p>{len(runs)} runs from {e(db_label)}; metric <code>{e(metric)}</code> ({e(METRIC_BY_NAME[metric].doc)}): each point is a
run's median, the band its 95% CI; dashed red lines are change points, labelled with the step [95% CI] and what
changed in the environment.</p>
<div class="filters">{"".join(options)} <span id="shown"></span></div>
<h2>Change points ({len(changes)})</h2>
<table class="changes"><tr><th>row</th><th>metric</th><th>runs</th><th>step [95% CI]</th><th>environment change</th></tr>{change_rows}</table>
<h2>Trends</h2>
{"".join(f'<figure class="plot">{svg}</figure>' for svg in plots)}
<h2>Runs</h2>
<table><tr><th>id</th><th>run directory</th><th>started</th>{header}</tr>{run_rows}</table>
<script type="application/json" id="runs-data">{runs_json}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def write_report(
    db: HistoryDB, out_dir: Path, metric: str = "wall_us_per_launch", filters: RunFilter = ALL_RUNS
) -> Path:
    """Write ``out_dir/index.html`` (atomically; the folder is created) and return its path."""
    out_dir = check_output_dir(out_dir, "--out-dir")
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = list_runs(db, filters)
    changes = detect_changes(db, filters, (metric,))
    plots = []
    for i, key in enumerate(row_keys(db, filters)):
        points = trend(db, key, metric, filters)
        if points:
            row_changes = [c for c in changes if (c.scenario, c.case, c.mode) == key]
            plots.append(_svg(key, metric, points, row_changes, i))
    path = out_dir / INDEX
    conditions = run_conditions(db, [r.id for r in runs])
    page = render_page(db.label, metric, runs, plots, changes, out_dir, conditions)
    atomic_write_text(path, page, "--out-dir")
    return path
