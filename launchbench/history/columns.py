"""The history's column names that code above the tables reads (no SQLAlchemy: ``history trend`` on a
current SQLite file never loads it). history.tables builds the tables with them."""

from __future__ import annotations

# the environment columns, in the order a change is described ("driver 580 → 590")
ENV_COLUMNS: tuple[str, ...] = (
    "gpu_name",
    "gpu_uuid",
    "driver",
    "cuda_runtime",
    "cupy",
    "launchbench_version",
    "git_commit",
    "git_branch",
    "host",
)
ENV_COLUMN_LABELS: dict[str, str] = {
    "gpu_name": "GPU",
    "gpu_uuid": "GPU UUID",
    "driver": "driver",
    "cuda_runtime": "CUDA runtime",
    "cupy": "CuPy",
    "launchbench_version": "launchbench",
    "git_commit": "commit",
    "git_branch": "branch",
    "host": "host",
}
SERIES: tuple[str, ...] = (
    "wall",
    "cpu",
    "gpu",
    "latency",
)  # the raw series, in results.json's SAMPLE_KEYS order
