"""A real Slurm cluster (one node, several CPU slots; .ci/slurm.sh starts it and sets
LAUNCHBENCH_TEST_SLURM=1): `fleet slurm --submit` hands real job arrays to sbatch whose tasks run real
`launchbench run` processes on the CPU fleet backend, and the merge job runs once they all succeeded.

Without the cluster the test skips with a reason; in CI ($CI=true) that is a failure."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
SLURM_VARIABLE = "LAUNCHBENCH_TEST_SLURM"
WAIT_S = 120.0
TINY = (TESTS / "data" / "fleet" / "tiny.yaml").read_text()


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster() -> None:
    if os.environ.get(SLURM_VARIABLE) == "1":
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(
            f"CI=true but ${SLURM_VARIABLE} is not 1: .ci/run starts a one-node Slurm cluster (.ci/slurm.sh)"
        )
    pytest.skip(f"needs a Slurm cluster: run .ci/slurm.sh as root and set {SLURM_VARIABLE}=1")


def _submit(scenario: Path, shared: Path, *args: str) -> str:
    """`launchbench fleet slurm … --submit` as a process; the merge job's id."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "LAUNCHBENCH_BACKEND": "fakes:fleet_backend",
        "LAUNCHBENCH_TEST_SLOW_NODE": "node1",  # the array's task 1 does extra host work per launch
    }
    command = [sys.executable, "-m", "launchbench", "fleet", "slurm", str(scenario), *args]
    command += ["--gpus", "0", "--shared", str(shared), "--run-args", "--quick", "--submit"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    found = re.search(r"^merge: (\d+)$", done.stdout, re.MULTILINE)
    assert found, done.stdout
    return found[1]


def _wait(job_ids: list[str], shared: list[Path]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        queued = subprocess.run(
            ["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if not queued.stdout.strip():
            return
        time.sleep(0.5)
    logs = "\n".join(p.read_text()[-800:] for s in shared for p in sorted((s / "logs").glob("*.out")))
    pytest.fail(f"the Slurm jobs {job_ids} did not end within {WAIT_S:.0f} s; logs:\n{logs}")


def test_a_real_array_measures_every_node_and_the_report_names_the_slow_one(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    nodes, shards = tmp_path / "nodes", tmp_path / "shards"
    merges = [_submit(scenario, nodes, "--nodes", "3"), _submit(scenario, shards, "--shards", "2")]
    _wait(merges, [nodes, shards])
    for shared in (nodes, shards):
        assert (shared / "merged" / "results.json").is_file(), sorted(
            p.name for p in (shared / "logs").iterdir()
        )
    report = (nodes / "merged" / "fleet.txt").read_text()
    outliers = [line for line in report.splitlines() if line.startswith("outlier:")]
    assert len(outliers) == 1 and outliers[0].startswith("outlier: node1 GPU 0: eager empty launch +"), report
    assert "governor powersave (fleet: performance)" in outliers[0]
    with open(nodes / "merged" / "results.csv", newline="") as handle:
        assert sorted({r["node"] for r in csv.DictReader(handle)}) == ["node0", "node1", "node2"]
    merged = json.loads((shards / "merged" / "results.json").read_text())
    assert sorted(m["shard"] for m in merged["members"]) == ["0/2", "1/2"]
    assert [c["case_id"] for c in merged["cases"]] == [
        "empty/length=1", "empty/length=10", "scale/length=1", "scale/length=10"
    ]  # fmt: skip
