"""The fleet report's rule on synthetic members (tests/builders.py): an outlier is more than the
threshold above the fleet median AND its interval lies above it; it is named with what differs."""

from __future__ import annotations

from pathlib import Path

from builders import make_run

from launchbench.fleet.score import default_rows, score_fleet
from launchbench.results.environment import parse_cpulist, pci_placement
from launchbench.results.merge_runs import SourceRun, merge_runs
from launchbench.results.metadata import Environment, Settings
from launchbench.results.schema import SCHEMA_VERSION, RunRecord
from launchbench.run.devices import local_cpus


def _node(name: str, seed: int, eager: float = 1.0, noise: float = 0.0, **host: str) -> SourceRun:
    """A node's quickstart run: its eager samples × ``eager`` and half of them ``noise`` lower, half higher (a bimodal row: its median where it was, its interval wide)."""
    run = make_run(seed=seed)
    cases = []
    for case in run.cases:
        mode = case.modes["eager"]
        samples = {
            k: [v * eager * (1 + noise * (-1) ** i) for i, v in enumerate(values)]
            for k, values in mode.samples.items()
        }
        cases.append(case.model_copy(update={"modes": {**case.modes, "eager": mode.with_samples(samples)}}))
    env = {
        **run.environment.model_dump(),
        "host": {"hostname": name, "cpu": "EPYC", "kernel": "6.1", "governor": "performance", **host},
    }
    record = run.model_copy(
        update={
            "cases": cases,
            "environment": Environment.model_validate(env),
            "settings": Settings(device=0),
        }
    )
    return SourceRun(Path(name), record, SCHEMA_VERSION)


def _fleet(*slow: SourceRun) -> RunRecord:
    return merge_runs([_node(f"n{i}", seed=i) for i in range(4)] + list(slow))


def test_a_slow_node_is_named_with_what_differs() -> None:
    report = score_fleet(_fleet(_node("slow", seed=9, eager=1.3, governor="powersave", kernel="5.15")))
    assert [(o.node, o.device) for o in report.outliers] == [("slow", 0)]
    (outlier,) = report.outliers
    assert {s.row.label for s in outlier.scores} == {"eager empty launch"}  # graph rows are not slower
    assert [(d.field, d.value, d.fleet) for d in outlier.differences] == [
        ("governor", "powersave", "performance"),
        ("kernel", "5.15", "6.1"),
    ]
    assert report.members == 5 and report.threshold == 0.10


def test_below_the_threshold_or_within_the_interval_is_not_an_outlier() -> None:
    assert score_fleet(_fleet(_node("a-bit", seed=9, eager=1.05))).outliers == ()  # +5% < 10%
    noisy = score_fleet(_fleet(_node("noisy", seed=9, eager=1.15, noise=0.5)))
    (score,) = [s for s in noisy.scores if s.node == "noisy" and s.row.label == "eager empty launch"]
    assert score.vs_fleet > 0.10 and score.ci_low <= score.fleet_median and not score.outlier
    assert score_fleet(_fleet(_node("fast", seed=9, eager=0.5))).outliers == ()  # faster is never an outlier


def test_the_key_rows_come_from_the_empty_chain() -> None:
    from launchbench.analysis.table import run_table

    rows = default_rows(run_table(make_run()))
    assert [(r.label, r.case, r.mode, r.metric) for r in rows] == [
        ("eager empty launch", "empty/length=1000", "eager", "wall_us_per_launch"),
        ("graph per node", "empty/length=1000", "graph", "wall_us_per_launch"),
        ("cudaGraphLaunch CPU", "empty/length=1", "graph", "cpu_us_per_iter"),
    ]


def test_cpu_lists_and_the_gpus_numa_cpus() -> None:
    assert parse_cpulist("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("0-x") == frozenset() and parse_cpulist("") == frozenset()
    assert pci_placement("ffff:ff:1f.7") == {"numa_node": None, "local_cpus": None}  # no such device
    mine = min(__import__("os").sched_getaffinity(0))
    assert local_cpus({"gpu": {"local_cpus": f"{mine}"}}) == {mine}
    assert local_cpus({"gpu": {"local_cpus": "100000"}}) == frozenset()  # none of ours: not pinned
    assert local_cpus({"gpu": {}}) == frozenset()


def test_a_pci_address_reads_alike_in_cudas_and_nvmls_spelling() -> None:
    devices = Path("/sys/bus/pci/devices")
    if not devices.is_dir() or not any(devices.iterdir()):
        import pytest

        pytest.skip("no PCI devices in sysfs here")
    first = sorted(p.name for p in devices.iterdir())[0]  # e.g. 0000:00:00.0
    cuda, nvml = first.upper(), "0000" + first.upper()  # 0000:00:00.0 and 00000000:00:00.0
    assert pci_placement(cuda) == pci_placement(nvml) == pci_placement(first)
    assert pci_placement(first)["local_cpus"] is not None
