"""run --devices all and ab --devices all on the real GPU backend: every device CUDA shows, one run with a
device column, the GPU's PCI address and NUMA placement recorded; per GPU an A/B pair and its gate."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.gpu
def test_devices_all_measures_every_gpu_into_one_run(tmp_path: Path) -> None:
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    out = tmp_path / "run"
    command = [sys.executable, "-m", "launchbench", "run", str(TESTS / "data" / "fleet" / "tiny.yaml")]
    command += ["--devices", "all", "--quick", "-q", "-d", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "LAUNCHBENCH_BACKEND"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr
    with open(out / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted({int(r["device"]) for r in rows}) == list(range(count))
    assert len(rows) == 8 * count and all(r["status"] in ("ok", "budget") for r in rows)
    members = json.loads((out / "results.json").read_text())["members"]
    assert [m["device"] for m in members] == list(range(count))
    gpu = members[0]["environment"]["gpu"]
    assert gpu["pci_address"].count(":") == 2 and "numa_node" in gpu and "local_cpus" in gpu
    assert "per device" in done.stdout


@pytest.mark.gpu
def test_ab_devices_all_pairs_both_sides_on_every_gpu(tmp_path: Path) -> None:
    """ab --devices all on the quickstart with a tiny budget (both variants this interpreter): per GPU
    a directory with both sides, its sides pinned to one CPU of the GPU's NUMA node, and its gate."""
    import cupy

    from launchbench.results.environment import parse_cpulist

    count = cupy.cuda.runtime.getDeviceCount()
    out = tmp_path / "ab"
    command = [sys.executable, "-m", "launchbench", "ab", str(TESTS.parent / "scenarios" / "quickstart.yaml")]
    command += ["--devices", "all", "--max-time", "0.5", "--passes", "2", "-q", "-d", str(out)]
    command += ["--fail-on", "wall_us_per_launch:50%", "--allow-blind", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if k != "LAUNCHBENCH_BACKEND"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert [d["device"] for d in document["devices"]] == list(range(count)) and document["passed"] is True
    gate = document["devices"][0]["gate"]
    assert gate["passed"] and len(gate["checks"]) >= 16  # 8 cases × 2 modes on wall_us_per_launch
    for side in ("a", "b"):
        record = json.loads((out / "devices" / "0" / side / "results.json").read_text())
        assert record["status"] == "complete" and len(record["cases"]) == 8
        cpus, local = record["settings"]["ab"]["cpus"], record["environment"]["gpu"].get("local_cpus")
        near = parse_cpulist(local) & os.sched_getaffinity(0) if local else set()
        assert len(cpus) == 1 and (not near or cpus[0] in near)
    assert (out / "devices" / "0" / "comparison.md").is_file() and (out / "comparison.md").is_file()
    with open(out / "a" / "results.csv", newline="") as handle:
        assert sorted({int(r["device"]) for r in csv.DictReader(handle)}) == list(range(count))
