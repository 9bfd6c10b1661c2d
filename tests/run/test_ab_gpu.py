"""launchbench ab on the GPU: both variants' workers import the python step module from their own path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_ab_runs_both_variants_from_their_paths(tmp_path: Path) -> None:
    out = tmp_path / "ab"
    command = [
        sys.executable,
        "-m",
        "launchbench",
        "ab",
        str(ROOT / "scenarios" / "ab_launch.yaml"),
        "--a",
        f"path={ROOT / 'examples' / 'ab' / 'base'}",
        "--b",
        f"path={ROOT / 'examples' / 'ab' / 'pr'}",
        "--quick",
        "--passes",
        "2",
        "--out",
        str(out),
        "--format",
        "json",
        "-o",
        str(tmp_path / "ab.json"),
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for side in ("a", "b"):
        record = load_run(out / side)
        assert record.status == "complete" and record.settings.ab.side == side.upper()
        assert all(not case.error and case.outputs_match for case in record.cases)
    rows = json.loads((tmp_path / "ab.json").read_text())["rows"]
    assert rows and all(row["verdict"] not in ("missing", "failed") for row in rows)
    assert (out / "comparison.md").is_file()
