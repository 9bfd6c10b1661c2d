"""Every run committed under results/ before the code took its present package layout, compared with
itself and with its neighbour in sorted order (the 65 pairs of tests/data/golden-verdicts/manifest.tsv),
gives byte for byte the CSV of verdicts and the gated markdown report, with their exit codes, that the
code of that layout gave (the expected files are its output on these runs)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchbench.cli import cli
from launchbench.results import store

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden-verdicts"
PAIRS = [tuple(line.split("\t")) for line in (GOLDEN / "manifest.tsv").read_text().splitlines() if line]
EXIT_CODES: dict[str, dict[str, int]] = json.loads((GOLDEN / "exit-codes.json").read_text())
CSV = ["--format", "csv", "--allow-different-gpu"]
GATED = ["--format", "markdown", "--fail-on", "wall_us_per_launch:10%", "--allow-different-gpu"]


def name_of(base: str, current: str) -> str:
    return f"{base}--{current}".replace("/", "_")


@pytest.fixture(scope="module")
def cached_loads() -> object:
    """load_run read once per results file for the whole module: a run is an immutable record, and
    reading the 33 files again for each of the 130 comparisons would only repeat the same parse."""
    return functools.lru_cache(maxsize=None)(store.load_run)


@pytest.mark.parametrize(("base", "current"), PAIRS, ids=[name_of(*pair) for pair in PAIRS])
def test_a_committed_pair_compares_as_it_did(
    base: str, current: str, cached_loads: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the runs are named by their paths relative to the checkout
    monkeypatch.setattr(store, "load_run", cached_loads)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    name = name_of(base, current)
    runner = CliRunner()
    for args, suffix, key in ((CSV, ".csv", "csv"), (GATED, ".md", "markdown")):
        result = runner.invoke(cli, ["compare", base, current, *args])
        assert result.exit_code == EXIT_CODES[name][key], result.output
        assert result.stdout == (GOLDEN / f"{name}{suffix}").read_text(), f"{name}{suffix} differs"


def test_the_manifest_covers_every_run_it_was_made_from() -> None:
    """Each run of the manifest sits beside its neighbour and with itself: 2n - 1 pairs for n runs."""
    runs = sorted({run for pair in PAIRS for run in pair})
    assert len(PAIRS) == 2 * len(runs) - 1
    assert all((ROOT / run / "results.json").is_file() for run in runs)
