"""A run directory's files: results.json and the tables derived from it (results.csv, and costmodel.csv
where a chain length varies), each written atomically."""

from __future__ import annotations

from pathlib import Path

from launchbench.analysis.costmodel import cost_model_table
from launchbench.analysis.table import run_table
from launchbench.results.schema import RunRecord
from launchbench.results.store import COSTMODEL_CSV, RESULTS_CSV, atomic_write_text, write_run


def write_tables(run_dir: Path, run: RunRecord) -> None:
    """results.csv and (where a chain length or the iterations per shape vary) costmodel.csv."""
    table = run_table(run)
    atomic_write_text(run_dir / RESULTS_CSV, table.to_csv(index=False))
    model = cost_model_table(table)
    if len(model):
        atomic_write_text(run_dir / COSTMODEL_CSV, model.to_csv(index=False))


def write_run_files(run_dir: Path, run: RunRecord) -> None:
    """results.json and the tables."""
    write_run(run_dir, run)
    write_tables(run_dir, run)
