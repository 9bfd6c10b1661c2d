"""history list, trend and changes --format json: versioned documents valid against their published schemas."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from jsonschema import Draft202012Validator

from launchbench.cli import cli

SCHEMAS = Path(__file__).resolve().parent.parent.parent / "docs" / "schemas"


def test_history_json_documents_are_valid(tmp_path: Path, stepped: list[Path]) -> None:
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    runner = CliRunner()
    assert runner.invoke(cli, ["history", "ingest", "--db", db, *map(str, stepped)]).exit_code == 0
    commands = {
        "list": (["list"], "runs"),
        "trend": (["trend", "quickstart/scale/length=100"], "points"),
        "changes": (["changes", "-m", "gpu_us_per_iter"], "changes"),
    }
    for name, (args, key) in commands.items():
        result = runner.invoke(cli, ["history", *args, "--db", db, "--format", "json"])
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["schema_version"] == 1 and document[key], name
        schema = json.loads((SCHEMAS / f"history-{name}.schema.json").read_text(encoding="utf-8"))
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(document)]
        assert not errors, (name, errors[:3])
        assert not Draft202012Validator(schema).is_valid({**document, key: [{"run_id": "one"}]})


def test_history_speaks_compare_s_vocabulary(tmp_path: Path, stepped: list[Path]) -> None:
    """--threshold [METRIC:]N% (a bare number still read as percent), --format markdown, ingest -q."""
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    runner = CliRunner()
    quiet = runner.invoke(cli, ["history", "ingest", "-q", "--db", db, *map(str, stepped)])
    assert quiet.exit_code == 0 and quiet.output == ""

    def steps(*args: str) -> int:
        result = runner.invoke(
            cli, ["history", "changes", "--db", db, "-m", "gpu_us_per_iter", "--format", "json", *args]
        )
        assert result.exit_code == 0, result.output
        return len(json.loads(result.stdout)["changes"])

    found = steps()
    assert found and steps("--threshold", "5%") == steps("--threshold", "5") == found
    assert (
        steps("--threshold", "gpu_us_per_iter:20%") == 0 and steps("--threshold", "latency_us:20%") == found
    )
    bad = runner.invoke(cli, ["history", "changes", "--db", db, "--threshold", "gpu:5%"])
    assert bad.exit_code == 2 and "unknown metric 'gpu'" in bad.output
    markdown = runner.invoke(
        cli, ["history", "changes", "--db", db, "-m", "gpu_us_per_iter", "--format", "markdown"]
    )
    assert markdown.stdout.startswith(f"**{found} change points**") and "| step % |" in markdown.stdout
