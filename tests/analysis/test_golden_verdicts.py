"""Every run committed under results/ before the code took its present package layout, compared with
itself and with its neighbour in sorted order (the 65 pairs of tests/data/golden-verdicts/manifest.tsv),
gives the CSV of verdicts and the gated markdown report, with their exit codes, that the code of that
layout gave (the expected files are its output on these runs): the markdown byte for byte, the CSV cell
for cell, each number to 1e-9 of itself (the last digits of a variance's prior may move with how its
root is found: analysis.drift._trigamma_inverse) and every other cell exactly."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
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
        expected = (GOLDEN / f"{name}{suffix}").read_text()
        if key == "csv":
            assert_same_table(result.stdout, expected, f"{name}{suffix}")
        else:
            assert result.stdout == expected, f"{name}{suffix} differs"


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def assert_same_table(got: str, expected: str, name: str) -> None:
    """The same CSV: the same lines and cells, a number within 1e-9 of the expected (relative), every
    other cell the same text."""
    got_rows, expected_rows = (list(csv.reader(io.StringIO(text))) for text in (got, expected))
    assert [len(r) for r in got_rows] == [len(r) for r in expected_rows], f"{name}: other lines or cells"
    for k, (line, want) in enumerate(zip(got_rows, expected_rows)):
        for column, (cell, was) in enumerate(zip(line, want)):
            a, b = _number(cell), _number(was)
            if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
                assert cell == was, f"{name} line {k} column {expected_rows[0][column]}: {cell!r} != {was!r}"
            else:
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (
                    f"{name} line {k} column {expected_rows[0][column]}: {cell} != {was}"
                )


def test_the_manifest_covers_every_run_it_was_made_from() -> None:
    """Each run of the manifest sits beside its neighbour and with itself: 2n - 1 pairs for n runs."""
    runs = sorted({run for pair in PAIRS for run in pair})
    assert len(PAIRS) == 2 * len(runs) - 1
    assert all((ROOT / run / "results.json").is_file() for run in runs)
