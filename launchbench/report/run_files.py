"""A run directory's files: results.json and the tables derived from it (results.csv, and costmodel.csv
where a chain length varies), each written atomically."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from launchbench.analysis.columns import LEVEL_METRICS
from launchbench.analysis.costmodel import cost_model_table
from launchbench.analysis.table import run_table
from launchbench.measure.levels import fitted_together
from launchbench.results.level_splits import fits_to_make
from launchbench.results.schema import METRIC_BY_NAME, RunRecord
from launchbench.results.store import COSTMODEL_CSV, RESULTS_CSV, atomic_write_text, write_run


def write_tables(run_dir: Path, run: RunRecord) -> pd.DataFrame:
    """results.csv and (where a chain length or the iterations per shape vary) costmodel.csv; the results
    table written. The rows' host levels come from the run's kept splits, the fits it lacks for the
    table's level columns made together first (measure.levels.fitted_together: in worker processes where
    many are needed)."""
    results = [result for case in run.cases for result in case.modes.values()]
    keys = dict.fromkeys(METRIC_BY_NAME[metric].sample_key for metric in LEVEL_METRICS)
    with fitted_together(fits_to_make(results, keys)):
        table = run_table(run)
    atomic_write_text(run_dir / RESULTS_CSV, table.to_csv(index=False))
    model = cost_model_table(table)
    if len(model):
        atomic_write_text(run_dir / COSTMODEL_CSV, model.to_csv(index=False))
    return table


@dataclass
class KeptTable:
    """A run's table writer (write_tables) that keeps the last results table it wrote with the record it
    is of: what follows the run (its summary, ``--check``) reads that table instead of building it again,
    where the run's final record is the one last written. The pair is one attribute, set at once, so
    the writers of several devices' runs at the same time cannot mix one's table with another's record."""

    last: tuple[RunRecord, pd.DataFrame] | None = None

    def __call__(self, run_dir: Path, run: RunRecord) -> None:
        self.last = (run, write_tables(run_dir, run))

    def table_of(self, run: RunRecord) -> pd.DataFrame | None:
        """The table last written where it is of ``run`` (that very record), else None."""
        last = self.last
        return last[1] if last is not None and last[0] is run else None


def write_run_files(run_dir: Path, run: RunRecord) -> None:
    """results.json and the tables (the tables take the host-level fits results.json's splits made)."""
    write_run(run_dir, run)
    write_tables(run_dir, run)
