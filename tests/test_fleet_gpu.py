"""run --devices all on the real GPU backend: every device CUDA shows, one run with a device column,
the GPU's PCI address and NUMA placement recorded."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


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
