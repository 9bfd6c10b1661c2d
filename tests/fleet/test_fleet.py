"""The fleet: shards, merge, run --devices, the backend option, the fleet report, and the Slurm and
Kubernetes launchers (written, and handed to a stand-in sbatch), all on the CPU fleet backend
(tests/fakes.py: FleetBackend)."""

from __future__ import annotations

import csv
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from launchbench.cli import cli
from launchbench.scenario.shard import Shard, ShardError

TESTS = Path(__file__).resolve().parents[1]
BACKEND = "fakes:fleet_backend"
TINY = (TESTS / "data" / "fleet" / "tiny.yaml").read_text()  # 2 chains × 2 lengths: 4 cases


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def invoke(*args: str, **env: str):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"LAUNCHBENCH_BACKEND": BACKEND, **env})


def measure(scenario: Path, out: Path, *more: str, **env: str) -> None:
    """A quick run in this process: what these tests read is the run (its shard, node, device, settings),
    not the worker processes that measured it (tests/run/test_runner.py tests those)."""
    result = invoke("run", scenario, "-d", out, "--quick", "--no-isolate", "-q", *more, **env)
    assert result.exit_code == 0, result.output


def rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def case_ids(run_dir: Path) -> list[str]:
    return [c["case_id"] for c in json.loads((run_dir / "results.json").read_text())["cases"]]


# --- shards ---------------------------------------------------------------------------------------------


@given(st.integers(0, 60), st.integers(1, 9))
def test_the_shards_of_n_are_disjoint_and_cover_every_case(count: int, n: int) -> None:
    items = list(range(count))
    slices = [Shard(k, n).select(items) for k in range(n)]
    assert sorted(x for part in slices for x in part) == items
    assert all(x % n == k for k, part in enumerate(slices) for x in part)  # index modulo N
    assert slices == [Shard.parse(f"{k}/{n}").select(items) for k in range(n)]  # the same every time


@pytest.mark.parametrize("text", ["2/2", "1", "-1/2", "a/b", "0/0", ""])
def test_a_shard_that_is_not_k_of_n_is_refused(text: str) -> None:
    with pytest.raises(ShardError):
        Shard.parse(text)


def test_run_refuses_a_bad_or_empty_shard_in_one_line(scenario: Path, tmp_path: Path) -> None:
    for shard, words in (("4/2", "K must be"), ("5/6", "holds no case")):
        result = invoke("run", scenario, "-d", tmp_path / shard.replace("/", "-"), "--shard", shard)
        assert result.exit_code == 2 and words in result.stderr and "Traceback" not in result.output


def test_a_shard_keeps_the_expectations_of_cases_in_other_shards(tmp_path: Path) -> None:
    scenario = tmp_path / "expects.yaml"
    scenario.write_text(
        TINY
        + 'expect:\n  - case: "empty/length=10"\n    mode: graph\n    metric: wall_us_per_launch\n    max: 100\n'
    )
    measure(scenario, tmp_path / "s0", "--shard", "0/2")  # shard 0 holds empty/length=1 and scale/length=1
    assert case_ids(tmp_path / "s0") == ["empty/length=1", "scale/length=1"]


def test_two_shards_merged_hold_the_plain_runs_cases_in_its_order(scenario: Path, tmp_path: Path) -> None:
    measure(scenario, tmp_path / "plain")
    for k in (1, 0):
        measure(scenario, tmp_path / f"s{k}", "--shard", f"{k}/2")
    assert case_ids(tmp_path / "s0") == case_ids(tmp_path / "plain")[0::2]
    assert json.loads((tmp_path / "s1" / "results.json").read_text())["settings"]["shard"] == "1/2"
    result = invoke("merge", tmp_path / "s1", tmp_path / "s0", "-d", tmp_path / "merged")
    assert result.exit_code == 0, result.output
    assert case_ids(tmp_path / "merged") == case_ids(tmp_path / "plain")
    table = rows(tmp_path / "merged")
    assert {(r["node"], r["device"]) for r in table} == {("node0", "0")}
    assert len(table) == len(rows(tmp_path / "plain"))


# --- merge refusals -------------------------------------------------------------------------------------


def _refused(*dirs: Path, out: Path) -> str:
    result = invoke("merge", *dirs, "-d", out)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert not (out / "results.json").exists()
    return result.stderr


def test_merge_refuses_runs_of_different_measurements(scenario: Path, tmp_path: Path) -> None:
    measure(scenario, tmp_path / "a", LAUNCHBENCH_TEST_NODE="a")
    measure(scenario, tmp_path / "b", "--max-time", "0.5", LAUNCHBENCH_TEST_NODE="b")
    assert "the measurement settings differs" in _refused(tmp_path / "a", tmp_path / "b", out=tmp_path / "m1")
    measure(scenario, tmp_path / "c", LAUNCHBENCH_TEST_NODE="c", LAUNCHBENCH_TEST_GPU_NAME="Other GPU")
    assert "GPU model differs" in _refused(tmp_path / "a", tmp_path / "c", out=tmp_path / "m2")
    changed = tmp_path / "changed" / "tiny.yaml"
    changed.parent.mkdir()
    changed.write_text(TINY.replace("size: 1000", "size: 2000"))
    measure(changed, tmp_path / "d", LAUNCHBENCH_TEST_NODE="d")
    assert "the scenario files differs" in _refused(tmp_path / "a", tmp_path / "d", out=tmp_path / "m3")


def test_merge_refuses_another_schema_version_and_an_unfinished_run(scenario: Path, tmp_path: Path) -> None:
    measure(scenario, tmp_path / "a", LAUNCHBENCH_TEST_NODE="a")
    measure(scenario, tmp_path / "b", LAUNCHBENCH_TEST_NODE="b")
    data = json.loads((tmp_path / "b" / "results.json").read_text())
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.json").write_text(json.dumps({**data, "schema_version": 3}))
    assert "schema version differs" in _refused(tmp_path / "a", old, out=tmp_path / "m1")
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "results.json").write_text(json.dumps({**data, "status": "interrupted"}))
    assert "--resume" in _refused(tmp_path / "a", unfinished, out=tmp_path / "m2")


def test_merge_refuses_missing_and_repeated_shards(scenario: Path, tmp_path: Path) -> None:
    for k in range(3):
        measure(scenario, tmp_path / f"s{k}", "--shard", f"{k}/3")
    assert "shard 2/3 is missing" in _refused(tmp_path / "s0", tmp_path / "s1", out=tmp_path / "m1")
    assert "also in" in _refused(tmp_path / "s0", tmp_path / "s1", tmp_path / "s1", out=tmp_path / "m2")
    measure(scenario, tmp_path / "whole")
    assert "a whole run among shards" in _refused(tmp_path / "s0", tmp_path / "whole", out=tmp_path / "m3")
    measure(scenario, tmp_path / "again")
    assert "node node0 device 0 also measured" in _refused(
        tmp_path / "whole", tmp_path / "again", out=tmp_path / "m4"
    )


def test_nodes_runs_merge_with_the_node_as_a_column(scenario: Path, tmp_path: Path) -> None:
    for node in ("n1", "n2"):
        measure(scenario, tmp_path / node, LAUNCHBENCH_TEST_NODE=node)
    assert invoke("merge", tmp_path / "n1", tmp_path / "n2", "-d", tmp_path / "m").exit_code == 0
    table = rows(tmp_path / "m")
    assert [r["node"] for r in table] == ["n1"] * 8 + ["n2"] * 8
    merged = json.loads((tmp_path / "m" / "results.json").read_text())
    assert [m["node"] for m in merged["members"]] == ["n1", "n2"]
    assert merged["members"][1]["environment"]["host"]["hostname"] == "n2"


# --- run --devices --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def devices_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """One run --devices all of three devices, each pinned to the same CPU, each device's run ingested
    into a history: (its directory, what it printed, the database, the CPU), shared by the tests that
    read it."""
    folder = tmp_path_factory.mktemp("devices")
    scenario = folder / "tiny.yaml"
    scenario.write_text(TINY)
    cpu = str(min(os.sched_getaffinity(0)))
    db = f"sqlite:///{folder / 'h.db'}"
    result = invoke(
        "run", scenario, "-d", folder / "r", "--quick", "--devices", "all", "--history", "--db", db,
        LAUNCHBENCH_TEST_DEVICES="3", LAUNCHBENCH_TEST_LOCAL_CPUS=cpu,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return folder / "r", result.output, db, cpu


def test_devices_all_runs_every_device_at_once_into_one_run(devices_run: tuple[Path, str, str, str]) -> None:
    run_dir, output, _, cpu = devices_run
    assert "per device" in output
    table = rows(run_dir)
    assert sorted({r["device"] for r in table}) == ["0", "1", "2"]
    assert len(table) == 3 * 8
    for device in range(3):
        assert case_ids(run_dir / "devices" / str(device)) == case_ids(run_dir)[:4]
    merged = json.loads((run_dir / "results.json").read_text())
    assert [m["environment"]["worker_cpus"] for m in merged["members"]] == [[int(cpu)]] * 3  # pinned
    assert merged["settings"]["devices"] == {str(d): [int(cpu)] for d in range(3)}


def test_devices_that_do_not_exist_are_refused(scenario: Path, tmp_path: Path) -> None:
    for spec, words in (("0,5", "device 5 does not exist"), ("0,0", "listed twice"), ("x", "give all")):
        result = invoke(
            "run", scenario, "-d", tmp_path / "r", "--devices", spec, LAUNCHBENCH_TEST_DEVICES="2"
        )
        assert result.exit_code == 2 and words in result.stderr, result.output
    assert not (tmp_path / "r" / "results.json").exists()


# --- the backend option ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, words", [("nosuch_module:x", "cannot import module"), ("fakes:nothing", "has no nothing"), ("fakes", "give module:function")]
)  # fmt: skip
def test_a_backend_that_cannot_be_loaded_is_one_line(
    scenario: Path, tmp_path: Path, spec: str, words: str
) -> None:
    result = invoke("run", scenario, "-d", tmp_path / "r", "--backend", spec)
    assert result.exit_code == 2 and words in result.stderr and "Traceback" not in result.output


def test_the_backend_comes_from_the_environment_variable(scenario: Path, tmp_path: Path) -> None:
    measure(scenario, tmp_path / "r", LAUNCHBENCH_TEST_NODE="from-the-variable")
    assert {r["node"] for r in rows(tmp_path / "r")} == {"from-the-variable"}


# --- fleet report ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four nodes' runs merged; node2 does extra host work per launch (and runs on powersave)."""
    tmp_path = tmp_path_factory.mktemp("fleet")
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    nodes = [f"node{i}" for i in range(4)]
    for node in nodes:
        measure(scenario, tmp_path / node, LAUNCHBENCH_TEST_NODE=node, LAUNCHBENCH_TEST_SLOW_NODE="node2")
    assert invoke("merge", *(tmp_path / n for n in nodes), "-d", tmp_path / "fleet").exit_code == 0
    return tmp_path / "fleet"


def test_fleet_report_names_the_slow_node_and_no_other(fleet_run: Path) -> None:
    result = invoke("fleet", "report", fleet_run, "--row", "scale/length=10/eager")
    assert result.exit_code == 0, result.output
    outliers = [line for line in result.output.splitlines() if line.startswith("outlier:")]
    assert len(outliers) == 1 and outliers[0].startswith("outlier: node2 GPU 0: eager empty launch +")
    assert "scale/length=10 eager" in outliers[0]
    assert "differs: governor powersave (fleet: performance)" in outliers[0]
    with open(fleet_run / "fleet" / "fleet.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert {r["row"] for r in table} == {
        "eager empty launch",
        "graph per node",
        "cudaGraphLaunch CPU",
        "scale/length=10 eager",
    }
    assert {r["node"] for r in table if r["outlier"] == "True"} == {"node2"}
    assert (fleet_run / "fleet" / "fleet.png").stat().st_size > 10_000


def test_fail_on_outlier_is_a_health_gate(fleet_run: Path, tmp_path: Path) -> None:
    assert invoke("fleet", "report", fleet_run, "--fail-on-outlier", "10%", "-q").exit_code == 1
    assert invoke("fleet", "report", fleet_run, "--fail-on-outlier", "60%", "-q").exit_code == 0  # +50%
    for bad in (("--fail-on-outlier", "x%"), ("--row", "nosuch/eager"), ("--row", "eager")):
        result = invoke("fleet", "report", fleet_run, *bad)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output


def test_fleet_report_scores_each_node_against_its_own_history(fleet_run: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'history.db'}"
    out = ("-d", tmp_path / "report")
    for node in ("node0", "node2"):
        assert invoke("history", "ingest", fleet_run.parent / node, "--db", db).exit_code == 0
    past = tmp_path / "earlier-node2"
    measure(fleet_run.parent / "tiny.yaml", past, LAUNCHBENCH_TEST_NODE="node2")  # node2 when it was fast
    assert invoke("history", "ingest", past, "--db", db).exit_code == 0
    assert invoke("fleet", "report", fleet_run, "--db", db, "-q", *out).exit_code == 0
    with open(tmp_path / "report" / "fleet.csv", newline="") as handle:
        table = {(r["node"], r["row"]): r for r in csv.DictReader(handle)}
    assert float(table[("node2", "eager empty launch")]["vs_history"]) == pytest.approx(0.5, abs=0.05)
    assert table[("node1", "eager empty launch")]["vs_history"] == ""  # no earlier run of node1


# --- Slurm and Kubernetes launchers ---------------------------------------------------------------------


def _stand_in_sbatch(folder: Path) -> Path:
    """An sbatch that logs its arguments and answers job ids 100, 101, …"""
    folder.mkdir()
    script = folder / "sbatch"
    script.write_text(
        '#!/bin/bash\necho "$*" >> "$(dirname "$0")/calls"\n'
        'n=$(wc -l < "$(dirname "$0")/calls")\necho "$((99 + n));cluster"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder / "calls"


def test_fleet_slurm_writes_an_array_and_a_merge_job_after_it(scenario: Path, tmp_path: Path) -> None:
    calls = _stand_in_sbatch(tmp_path / "bin")
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    args = (
        "fleet",
        "slurm",
        scenario,
        "--shards",
        "2",
        "--partition",
        "gpu",
        "--shared",
        tmp_path / "shared",
    )
    result = invoke(*args, "--run-args", "--quick", "--submit", PATH=path)
    assert result.exit_code == 0, result.output
    assert "tasks: 100" in result.output and "merge: 101" in result.output
    first, second = calls.read_text().splitlines()
    assert first.startswith("--parsable --array=0-1 ") and first.endswith("fleet.sbatch")
    assert "--dependency=afterok:100 " in second and second.endswith("merge.sbatch")
    task = (tmp_path / "shared" / "slurm" / "fleet.sbatch").read_text()
    assert "#SBATCH --partition=gpu" in task and "#SBATCH --gpus-per-task=1" in task
    assert '--shard "$TASK/2" --quick' in task and "-m launchbench" in task
    merge = (tmp_path / "shared" / "slurm" / "merge.sbatch").read_text()
    assert "merge" in merge and "/runs/* -d" in merge
    for name in ("fleet.sbatch", "merge.sbatch", "submit.sh"):
        assert subprocess.run(["bash", "-n", tmp_path / "shared" / "slurm" / name]).returncode == 0


def test_fleet_slurm_places_one_job_on_each_listed_node(scenario: Path, tmp_path: Path) -> None:
    calls = _stand_in_sbatch(tmp_path / "bin")
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    result = invoke(
        "fleet", "slurm", scenario, "--nodelist", "a,b", "--shared", tmp_path / "s", "--submit", PATH=path
    )
    assert result.exit_code == 0, result.output
    a, b, merge = calls.read_text().splitlines()
    assert (
        "-w a --export=ALL,LAUNCHBENCH_FLEET_TASK=0" in a
        and "-w b --export=ALL,LAUNCHBENCH_FLEET_TASK=1" in b
    )
    assert "--dependency=afterok:100:101 " in merge
    task = (tmp_path / "s" / "slurm" / "fleet.sbatch").read_text()
    assert "#SBATCH --exclusive" in task and "--shard" not in task
    assert "fleet report" in (tmp_path / "s" / "slurm" / "merge.sbatch").read_text()


def test_fleet_slurm_usage_errors(scenario: Path, tmp_path: Path) -> None:
    shared = ("--shared", tmp_path / "s")
    for args, words in (
        ((), "give one of"),
        (("--nodes", "2", "--shards", "2"), "give one of"),
        (("--shards", "5"), "holds 4 cases"),
    ):
        result = invoke("fleet", "slurm", scenario, *shared, *args)
        assert result.exit_code == 2 and words in result.output, result.output
    result = invoke("fleet", "slurm", scenario, *shared, "--nodes", "2", "--submit", PATH=str(tmp_path))
    assert result.exit_code == 2 and "sbatch is not on PATH" in result.stderr


def test_fleet_k8s_writes_an_indexed_job_the_schema_accepts(scenario: Path, tmp_path: Path) -> None:
    import kubernetes_validate

    out = tmp_path / "job.yaml"
    args = (
        "fleet",
        "k8s",
        scenario,
        "--completions",
        "2",
        "--image",
        "registry.example/launchbench:1",
        "-o",
        out,
    )
    assert invoke(*args).exit_code == 0
    config, job = list(yaml.safe_load_all(out.read_text()))
    for document in (config, job):
        kubernetes_validate.validate(document, "1.30", strict=True)
    assert config["data"]["tiny.yaml"] == TINY
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == 2
    container = spec["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert '--shard "$JOB_COMPLETION_INDEX/2"' in container["command"][-1]
    assert (
        spec["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "launchbench-results"
    )
    broken = {**job, "spec": {**spec, "completions": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.30", strict=True)


def test_compare_and_history_refuse_a_run_with_a_case_per_node(fleet_run: Path, tmp_path: Path) -> None:
    for args in (
        ("compare", fleet_run.parent / "node0", fleet_run),
        ("history", "ingest", fleet_run, "--db", f"sqlite:///{tmp_path / 'h.db'}"),
    ):
        result = invoke(*args)
        assert result.exit_code == 2 and "once per member" in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1


def test_devices_with_history_ingest_each_devices_own_run(devices_run: tuple[Path, str, str, str]) -> None:
    listed = invoke("history", "list", "--db", devices_run[2])
    assert "3 runs in" in listed.output, listed.output
    names = [line.split("│")[2].strip() for line in listed.output.splitlines() if line.startswith("│")]
    assert sorted(names) == ["0", "1", "2"]  # RUN/devices/0, RUN/devices/1 and RUN/devices/2


def test_resume_keeps_the_shard_it_measured(scenario: Path, tmp_path: Path) -> None:
    measure(scenario, tmp_path / "s1", "--shard", "1/2")
    result = invoke("run", "--resume", tmp_path / "s1", "--shard", "0/2")
    assert result.exit_code == 2 and "measured shard 1/2" in result.output, result.output


def test_ab_takes_the_backend_option_for_its_program_workers(scenario: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["ab", str(scenario), "--backend", BACKEND, "--quick", "-q", "-d", str(tmp_path / "ab")],
        env={"PYTHONPATH": str(TESTS), "LAUNCHBENCH_TEST_NODE": "ab-node"},
    )
    assert result.exit_code == 0, result.output
    assert {r["node"] for side in ("a", "b") for r in rows(tmp_path / "ab" / side)} == {"ab-node"}
