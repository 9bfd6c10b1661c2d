"""History: a database of runs (SQLite by default, PostgreSQL by URL), trends, change points and
baselines drawn from many runs. Layer: above analysis, below report. Run directories stay the source of
truth; the database holds what the statistics use (per-pass medians and samples, per-run summaries) and
the environment as columns to filter on."""

ENV_VAR = "LAUNCHBENCH_HISTORY_DB"  # the database URL when --db is not given
DEFAULT_LAST = 10  # a baseline drawn from history: the newest N matching runs
DEFAULT_METRIC = "wall_us_per_launch"  # trend and report: the metric of a row they follow
