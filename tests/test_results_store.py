import json
import re
from pathlib import Path

import pytest
from builders import make_run

from launchbench.analysis.table import COLUMNS, run_table
from launchbench.errors import ResultsFileError
from launchbench.report.run_files import write_run_files as write_run
from launchbench.results.schema import SCHEMA_VERSION
from launchbench.results.store import create_run_dir, load_run

ROOT = Path(__file__).parent.parent


def test_round_trip(tmp_path):
    run = make_run()
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", run)
    back = load_run(tmp_path / "r")
    assert back == run
    assert load_run(tmp_path / "r" / "results.csv") == run


def test_csv_has_every_documented_column_and_graph_only_columns_empty_for_eager(tmp_path):
    table = run_table(make_run())
    assert list(table.columns) == list(COLUMNS)
    eager = table[table["mode"] == "eager"]
    assert eager["capture_us"].isna().all() and eager["speedup"].isna().all()
    assert table[table["mode"] == "graph"]["capture_us"].notna().all()


def test_readme_documents_every_column():
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", readme, flags=re.M))
    spread = {c for c in COLUMNS if any(c.endswith("_" + s) for s in ("ci_low", "ci_high", "p5", "p95", "mean", "std", "mad", "n", "outliers", "rel_ci", "rel_noise"))}
    missing = [c for c in COLUMNS if c not in documented and c not in spread]
    assert not missing, f"README lacks these results.csv columns: {missing}"
    for suffix in ("ci_low", "ci_high", "p5", "p95", "mean", "std", "mad", "n", "outliers", "rel_ci", "rel_noise"):
        assert f"`<metric>_{suffix}`" in readme


def test_newer_schema_and_other_tools_are_refused(tmp_path):
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", make_run())
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    (tmp_path / "r" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match="newer"):
        load_run(tmp_path / "r")
    data["tool"] = "pyperf"
    (tmp_path / "r" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match="not launchbench"):
        load_run(tmp_path / "r")


def test_truncated_file_is_refused(tmp_path):
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", make_run())
    path = tmp_path / "r" / "results.json"
    path.write_text(path.read_text()[:500])
    with pytest.raises(ResultsFileError, match="truncated or corrupt"):
        load_run(path)


def test_writes_leave_no_temporary_files(tmp_path):
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", make_run())
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["costmodel.csv", "results.csv", "results.json"]
