"""The runs committed under results/: every results.json, and the benchmark outputs kept gzipped beside
their READMEs (results.json.gz), found and read alike, so the tests over committed runs see them all."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
GZIPPED = ".gz"


def committed_results(under: Path = RESULTS) -> list[Path]:
    """Every results file under ``under``, plain or gzipped, in path order."""
    return sorted([*under.rglob("results.json"), *under.rglob(f"results.json{GZIPPED}")])


def results_bytes(path: Path) -> bytes:
    """A committed results file's bytes as launchbench wrote them (a gzipped one decompressed)."""
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == GZIPPED else raw


def committed_record(path: Path) -> RunRecord:
    """load_run of a committed results file; a gzipped one decompressed into a run directory of its own
    first, so that load_run reads it as it reads any run."""
    if path.suffix != GZIPPED:
        return load_run(path)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "results.json").write_bytes(results_bytes(path))
        return load_run(folder)
