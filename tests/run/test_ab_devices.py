"""ab --devices on the CPU: one paired run per pretend GPU at once (tests/fakes.py:
DeviceRecordingBackend), each device's sides interleaved and pinned to a CPU of their own, a comparison
and gate per device, and a gate that fails when one device's does, naming it. The tests that read a
passing two-device run share one (devices_run)."""

from __future__ import annotations

import csv
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import ORDER_FILE_VARIABLE, SIDE_VARIABLE, SLOW_DEVICE_VARIABLE, SLOWDOWN_VARIABLE
from test_ab import ORDER, SCENARIO

from launchbench.cli import cli
from launchbench.run.ab_devices import DeviceCpusError, auto_cpus, device_cpus, listed_cpus
from launchbench.run.runner import RunEvents

TESTS = Path(__file__).resolve().parents[1]
GATE = ("--fail-on", "wall_us_per_launch:5%", "-q")
CPUS = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs this process may use, one per device")


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO)
    return path


def invoke(tmp_path: Path, *args: object, b: str = "", **env: str):
    """ab on the device-recording backend, its workers logging what they prepare to tmp_path/order.txt."""
    variants = ["--a", f"env={SIDE_VARIABLE}=A", "--b", f"env={SIDE_VARIABLE}=B{b}"]
    return CliRunner().invoke(
        cli,
        ["ab", *variants, *(str(a) for a in args)],
        env={
            "LAUNCHBENCH_BACKEND": "fakes:device_recording_backend",
            "PYTHONPATH": str(TESTS),
            ORDER_FILE_VARIABLE: str(tmp_path / "order.txt"),
            "GITHUB_STEP_SUMMARY": "",
            **env,
        },
    )


def _worker_cpus(run_dir: Path) -> list[int]:
    return json.loads((run_dir / "results.json").read_text())["environment"]["worker_cpus"]


@dataclass(frozen=True)
class DevicesRun:
    """One ab --devices all of two devices with the gate and --history: what it printed, where."""

    output: str
    folder: Path
    out: Path
    db: str


@pytest.fixture(scope="module")
def devices_run(tmp_path_factory: pytest.TempPathFactory) -> DevicesRun:
    """Two devices on two NUMA nodes (one CPU each: device 0's node holds CPUS[0], device 1's CPUS[1]),
    two passes, gated, each device's pair ingested into a history: shared by the tests that read it."""
    if len(CPUS) < 2:
        pytest.skip("needs 2 CPUs this process may use, one per device")
    folder = tmp_path_factory.mktemp("ab_devices")
    scenario = folder / "tiny.yaml"
    scenario.write_text(SCENARIO)
    out, db = folder / "ab", f"sqlite:///{folder / 'h.db'}"
    args = (scenario, "--devices", "all", "-d", out, *GATE, "--passes", "2", "--history", "--db", db)
    local = f"{CPUS[0]};{CPUS[1]}"
    result = invoke(folder, *args, LAUNCHBENCH_TEST_DEVICES="2", LAUNCHBENCH_TEST_LOCAL_CPUS=local)
    assert result.exit_code == 0, result.output
    return DevicesRun(result.output, folder, out, db)


@two_cpus
def test_each_device_interleaves_its_sides_on_a_cpu_of_its_own(devices_run: DevicesRun) -> None:
    """Each device's sides measured in ab's order, its workers on its node's CPU; both sides merged
    into OUT/a and OUT/b with a device column."""
    out = devices_run.out
    lines = (devices_run.folder / "order.txt").read_text().splitlines()
    for device in (0, 1):
        own = [line.split(" ", 1)[1] for line in lines if line.startswith(f"{device} ")]
        assert own == ORDER  # as ab on one device
        for side in ("a", "b"):
            assert _worker_cpus(out / "devices" / str(device) / side) == [CPUS[device]]
        assert (out / "devices" / str(device) / "comparison.md").is_file()
    for side in ("a", "b"):
        with open(out / side / "results.csv", newline="") as handle:
            assert sorted({r["device"] for r in csv.DictReader(handle)}) == ["0", "1"]
        settings = json.loads((out / side / "results.json").read_text())["settings"]
        assert {d: v["cpus"] for d, v in settings["devices"].items()} == {"0": [CPUS[0]], "1": [CPUS[1]]}
    assert "PASS: no regression on 2 device(s)" in devices_run.output
    assert "# launchbench ab on devices 0, 1: ✅" in (out / "comparison.md").read_text()


@two_cpus
def test_a_regression_on_one_device_fails_the_gate_and_names_it(scenario: Path, tmp_path: Path) -> None:
    """B's eager launches cost 30% more on device 1 only: exit 1, the outcome, markdown and JUnit name
    device 1 and pass device 0."""
    out, junit, md = tmp_path / "ab", tmp_path / "junit.xml", tmp_path / "ab.md"
    slow = f",env={SLOWDOWN_VARIABLE}=0.3,env={SLOW_DEVICE_VARIABLE}=1"
    args = (scenario, "--devices", "0,1", "-d", out, *GATE, "--passes", "2")
    result = invoke(
        tmp_path, *args, "--junit", junit, "--format", "markdown", "-o", md, b=slow,
        LAUNCHBENCH_TEST_DEVICES="2",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "FAIL: device 1: " in result.output and "device 0:" not in result.output
    text = md.read_text()
    assert "the gate fails on device 1\n" in text
    headlines = [line for line in text.splitlines() if line.startswith("## device ")]
    assert len(headlines) == 2
    assert headlines[0].startswith("## device 0 (CPU ") and headlines[0].endswith("✅ no regression")
    assert headlines[1].startswith("## device 1 (CPU ") and headlines[1].endswith("❌ 2 regressions")
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    assert suites["launchbench ab device 0"].get("failures") == "0"
    assert int(suites["launchbench ab device 1"].get("failures", "0")) >= 1
    failing = [c for c in suites["launchbench ab device 1"] if c.find("failure") is not None]
    assert failing and all(c.get("classname").startswith("launchbench.ab.device1.") for c in failing)
    assert (out / "devices" / "1" / "b" / "results.json").is_file()


@two_cpus
def test_json_names_the_failed_device(scenario: Path, tmp_path: Path) -> None:
    slow = f",env={SLOWDOWN_VARIABLE}=0.3,env={SLOW_DEVICE_VARIABLE}=0"
    args = (scenario, "--devices", "all", "-d", tmp_path / "ab", "--fail-on", "wall_us_per_launch:5%")
    result = invoke(
        tmp_path, *args, "--format", "json", "-q", "--passes", "2", b=slow, LAUNCHBENCH_TEST_DEVICES="2"
    )
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    from jsonschema import validate

    from launchbench.report.json_schemas import SCHEMAS

    validate(document, SCHEMAS["ab-devices"]())
    assert document["passed"] is False and document["failed_devices"] == [0]
    assert [d["device"] for d in document["devices"]] == [0, 1]
    assert document["devices"][1]["gate"]["passed"] is True


@two_cpus
def test_every_devices_topology_comes_from_a_worker_forked_from_one_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CPUs each device's sides are pinned to come from what a worker of variant A reports on that
    device (here each device's NUMA node holds one CPU); those workers are forked from one program server
    of the variant, and a CPU list that cannot fit the listed devices is refused before any starts."""
    from fakes import LOCAL_CPUS_VARIABLE, device_recording_backend

    from launchbench.run import ab as run_ab_module
    from launchbench.run.ab import Variant
    from launchbench.run.ab_devices import pinned_devices

    forks: list[list[int]] = []

    class CountedServer(run_ab_module.ProgramServer):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            forks.append([])

        def fork(self, device: int):  # type: ignore[no-untyped-def]
            forks[-1].append(device)
            return super().fork(device)

    monkeypatch.setattr(run_ab_module, "ProgramServer", CountedServer)
    for name, value in {
        "PYTHONPATH": str(TESTS),
        "LAUNCHBENCH_TEST_DEVICES": "2",
        LOCAL_CPUS_VARIABLE: f"{CPUS[1]};{CPUS[0]}",
    }.items():
        monkeypatch.setenv(name, value)
    allowed = frozenset(CPUS)
    variant = Variant()
    pinned = pinned_devices(None, "auto", variant, device_recording_backend, allowed)
    assert pinned == {0: (CPUS[1],), 1: (CPUS[0],)}
    assert len(forks) == 1 and sorted(forks[0]) == [0, 1]
    with pytest.raises(DeviceCpusError, match="names 1 CPU"):
        pinned_devices((0, 1), str(CPUS[0]), variant, device_recording_backend, allowed)
    with pytest.raises(DeviceCpusError, match="one CPU per device that this process may use"):
        pinned_devices((0, 1), "99999,0", variant, device_recording_backend, allowed)
    assert len(forks) == 1  # neither refusal started a server


@pytest.mark.parametrize(
    "args, words",
    [
        (("--devices", "x"), "give all or device indexes"),
        (("--devices", "0,0"), "listed twice"),
        (("--devices", "0,5"), "device 5 does not exist"),
        (("--devices", "0,1", "--cpu", str(CPUS[0])), "names 1 CPU(s) for 2 devices"),
        (("--devices", "0,1", "--cpu", "99999,0"), "one CPU per device that this process may use"),
        (("--devices", "all"), f"{len(CPUS) + 1} devices need a CPU each"),
    ],
)
def test_devices_or_cpus_that_cannot_be_used_are_one_line(
    scenario: Path, tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    count = str(max(2, len(CPUS) + 1)) if args[-1] == "all" else "2"
    result = invoke(tmp_path, scenario, "-d", tmp_path / "ab", *args, LAUNCHBENCH_TEST_DEVICES=count)
    assert result.exit_code == 2, result.output
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "order.txt").exists()  # nothing measured


def test_auto_gives_each_device_the_highest_free_cpu_of_its_node() -> None:
    node0, node1 = frozenset({0, 1, 2, 3}), frozenset({4, 5, 6, 7})
    allowed = node0 | node1
    local = {0: node0, 1: node0, 2: node1, 3: node1}
    assert auto_cpus([0, 1, 2, 3], local, allowed) == {0: (3,), 1: (2,), 2: (7,), 3: (6,)}
    crowded = {d: frozenset({0, 1}) for d in range(3)}  # a node with fewer CPUs than GPUs
    assert auto_cpus([0, 1, 2], crowded, frozenset({0, 1, 2})) == {0: (1,), 1: (0,), 2: (2,)}
    assert auto_cpus([0, 1], {}, frozenset({0, 1})) == {0: (1,), 1: (0,)}  # no topology: highest free
    with pytest.raises(DeviceCpusError, match="3 devices need a CPU each"):
        auto_cpus([0, 1, 2], {}, frozenset({0, 1}))


def test_listed_cpus_are_one_per_device_in_order() -> None:
    allowed = frozenset({0, 1, 2, 3})
    assert listed_cpus("3,1", [0, 2], allowed) == {0: (3,), 2: (1,)}
    for text, words in (
        ("3", "names 1 CPU"),
        ("1,1", "listed twice"),
        ("1,9", "may use"),
        ("a,b", "may use"),
    ):
        with pytest.raises(DeviceCpusError, match=words):
            listed_cpus(text, [0, 2], allowed)


def test_cpu_none_pins_no_device_and_auto_reads_each_gpus_node() -> None:
    environments = {d: {"gpu": {"local_cpus": str(CPUS[d % len(CPUS)])}} for d in (0, 1)}
    allowed = frozenset(CPUS)
    assert device_cpus("none", [0, 1], environments, allowed) == {0: (), 1: ()}
    if len(CPUS) >= 2:
        assert device_cpus("auto", [0, 1], environments, allowed) == {0: (CPUS[0],), 1: (CPUS[1],)}


@two_cpus
def test_history_takes_each_devices_pair_with_its_own_id(devices_run: DevicesRun) -> None:
    out, db = devices_run.out, devices_run.db
    listed = CliRunner().invoke(cli, ["history", "list", "--db", db, "--format", "json"])
    runs = {Path(str(r["run_dir"])): (r["ab_id"], r["ab_side"]) for r in json.loads(listed.stdout)["runs"]}
    ids = [
        json.loads((out / "devices" / d / "a" / "results.json").read_text())["settings"]["ab"]["id"]
        for d in "01"
    ]
    assert ids[0] != ids[1]
    assert runs == {(out / "devices" / d / s).resolve(): (ids[int(d)], s.upper()) for d in "01" for s in "ab"}


def test_an_interrupt_waits_for_every_device_to_clean_up() -> None:
    """The main thread interrupted by a signal while it waits: each device's thread is told (its events
    raise at its next case) and has finished its own cleanup before the interrupt goes on."""
    import signal
    import threading
    import time

    from launchbench.run.devices import on_each_device
    from launchbench.run.runner import SilentEvents

    cleaned: list[int] = []

    def work(device: int, events: RunEvents) -> None:
        try:
            while True:
                events.case_started(None, 0, 1)  # type: ignore[arg-type]
                time.sleep(0.01)
        except KeyboardInterrupt:
            time.sleep(
                0.3 - 0.1 * device
            )  # results written, workers stopped; device 0 (waited on first) last
            cleaned.append(device)
            raise

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only, and this test runs in another")
    previous = signal.signal(signal.SIGUSR1, interrupt)
    main = threading.main_thread().ident
    assert main is not None
    threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGUSR1)).start()  # to the waiting thread
    try:
        with pytest.raises(KeyboardInterrupt):
            on_each_device([0, 1, 2], work, lambda device: SilentEvents())
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert sorted(cleaned) == [0, 1, 2]
    assert [t for t in threading.enumerate() if t.name.startswith("launchbench-device-")] == []
