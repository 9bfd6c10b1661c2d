"""A run's environment and settings as typed models (launchbench/results/metadata.py): every committed
results file reads into them and writes back what it holds; a new run writes the keys launchbench's
writer puts there, in its order; keys this version does not know survive; older environment layouts
read in the one layout callers see."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from committed_runs import committed_record, committed_results, results_bytes
from fakes import ScriptedBackend

from launchbench.cli import cli
from launchbench.results.environment import summarize_environment
from launchbench.results.metadata import Environment, Overrides, Settings
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, write_run
from launchbench.run import runner
from launchbench.run.resume import RunSettings
from launchbench.run.session import new_record

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted(
    [
        *committed_results(),
        *(p for p in (ROOT / "tests" / "data").rglob("results.json") if "bad" not in p.parts),
        *(ROOT / "tests" / "data" / "golden").glob("results-v*.json"),
    ]
)
# runs written by launchbench's own writer: their metadata's key order is the writer's
WRITTEN = [
    ROOT / "results" / name / "results.json"
    for name in (
        "quickstart-h200-v5",  # a run
        "fleet-h200/shard-0",  # a shard: the shard after the case limit
        "fleet-h200/devices",  # a run on several devices: no device, the devices' CPUs last
        "ab-h200/defaults/aa-1/a",  # an A/B side: its ab entry after the device
        "fidelity-h200/run-0",
    )
]


def _raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(results_bytes(path).decode("utf-8"))
    return data


def test_the_committed_files_are_found() -> None:
    assert len(COMMITTED) >= 35
    assert {f"results-v{v}.json" for v in range(1, 6)} <= {p.name for p in COMMITTED}


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_committed_file_reads_into_the_models_and_writes_back_what_it_holds(path: Path) -> None:
    raw, record = _raw(path), committed_record(path)
    assert isinstance(record.environment, Environment) and isinstance(record.settings, Settings)
    written = json.loads(record.model_dump_json())
    assert written["environment"] == raw["environment"]
    assert written["settings"] == raw["settings"]
    members = [m["environment"] for m in raw.get("members", [])]
    assert [m["environment"] for m in written.get("members", [])] == members
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again.environment == record.environment and again.settings == record.settings


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: str(p.relative_to(ROOT)))
def test_metadata_is_written_in_the_writers_order(path: Path) -> None:
    """Byte for byte: the models declare their fields in the order launchbench's writer puts them."""
    raw, record = _raw(path), load_run(path)
    written = json.loads(record.model_dump_json())
    for part in ("environment", "settings"):
        assert json.dumps(written[part]) == json.dumps(raw[part]), part


def test_the_models_are_read_as_attributes() -> None:
    record = load_run(ROOT / "results" / "ab-h200" / "defaults" / "aa-1" / "a")
    assert record.settings.ab.side == "A" and record.settings.ab.id == "aeec0053f0d4"
    assert record.settings.overrides.passes == 10 and record.settings.overrides.max_time is None
    assert record.settings.isolate is True and record.settings.device == 0
    assert record.environment.gpu.name == "NVIDIA H200" and record.environment.gpu.uuid
    assert record.environment.host.cores and record.environment.clocks.sm_max_mhz
    plain = load_run(ROOT / "tests" / "data" / "golden" / "results-v5.json")
    assert plain.settings.ab.side is None and not plain.settings.recorded("ab")
    assert plain.environment.host.hostname is None and plain.environment.gpu.pci_address is None


class _RealLayoutBackend(ScriptedBackend):
    """The scripted backend reporting the environment of a real H200 run, as collect_environment lays it out."""

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = _raw(WRITTEN[0])["environment"]
        return env


def test_a_new_run_writes_its_environment_and_settings_as_launchbench_wrote_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted run through the CLI: results.json's environment is the backend's, key for key in its
    order, and its settings are the writer's (overrides, isolate, device, max_cases)."""
    monkeypatch.setattr(
        runner,
        "RunOptions",
        functools.partial(runner.RunOptions, backend_factory=lambda d: _RealLayoutBackend()),
    )
    run_dir = tmp_path / "run"
    scenario = ROOT / "tests" / "data" / "scripted" / "three.yaml"
    args = ["run", str(scenario), "-d", str(run_dir), "--no-isolate", "--passes", "1", "--max-time", "0.2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    written = _raw(run_dir / "results.json")
    assert json.dumps(written["environment"]) == json.dumps(_raw(WRITTEN[0])["environment"])
    expected = {"overrides": {"max_time": 0.2, "passes": 1}, "isolate": False, "device": 0, "max_cases": None}
    assert json.dumps(written["settings"]) == json.dumps(expected)


def test_a_new_record_is_written_as_the_writer_wrote_it(tmp_path: Path) -> None:
    env = _raw(WRITTEN[0])["environment"]
    settings = RunSettings(Overrides(passes=3), isolate=True, device=1, max_cases=4).as_settings()
    record = new_record(env, [], settings.model_copy(update={"shard": "0/2"}), ["launchbench"])
    write_run(tmp_path, record)
    written = _raw(tmp_path / "results.json")
    assert json.dumps(written["environment"]) == json.dumps(env)
    expected = {"overrides": {"passes": 3}, "isolate": True, "device": 1, "max_cases": 4, "shard": "0/2"}
    assert json.dumps(written["settings"]) == json.dumps(expected)


def test_unknown_keys_and_nulls_survive_a_round_trip(tmp_path: Path) -> None:
    base = load_run(ROOT / "tests" / "data" / "golden" / "results-v5.json")
    env = {
        "gpu": {"name": "X", "serial": "123"},
        "git_branch": "main",
        "host": {"cpu": "EPYC", "rack": 7},
        "nccl": None,
    }
    settings = {
        "overrides": {"max_time": 1.5, "sample_time": 0.01},
        "max_cases": None,
        "ab": {"side": "A", "note": [1, 2]},
        "from_a_tool": {"k": "v"},
    }
    record = base.model_copy(
        update={"environment": Environment.model_validate(env), "settings": Settings.model_validate(settings)}
    )
    write_run(tmp_path, record)
    written = _raw(tmp_path / "results.json")
    assert written["environment"] == env and written["settings"] == settings
    again = load_run(tmp_path)
    assert again.environment.extra == {"git_branch": "main"} and again.environment.gpu.extra == {
        "serial": "123"
    }
    assert again.settings.overrides.extra == {"sample_time": 0.01} and again.settings.recorded("max_cases")
    assert json.loads(again.model_dump_json())["settings"] == settings
    assert "device" not in written["settings"] and "cuda_runtime" not in written["environment"]


LEGACY = {
    "gpu given as its name": ({"gpu": "NVIDIA H200"}, "gpu", "NVIDIA H200"),
    "gpu_name": ({"gpu_name": "NVIDIA H200"}, "gpu", "NVIDIA H200"),
    "driver_version": ({"driver_version": "580.1"}, "driver", "580.1"),
    "gpu.driver": ({"gpu": {"name": "H", "driver": "580.2"}}, "driver", "580.2"),
    "gpu.driver_version": ({"gpu": {"driver_version": "580.3"}}, "driver", "580.3"),
    "cuda.runtime": ({"cuda": {"runtime": "13.2"}}, "cuda_runtime", "13.2"),
    "cuda_runtime_version": ({"cuda_runtime_version": "13.1"}, "cuda_runtime", "13.1"),
    "cupy_version": ({"cupy_version": "14.2.0"}, "cupy", "14.2.0"),
    "cupy.version": ({"cupy": {"version": "14.1.0"}}, "cupy", "14.1.0"),
    "top-level cpu": ({"cpu": "EPYC 9654"}, "cpu", "EPYC 9654"),
}


@pytest.mark.parametrize("layout", LEGACY.values(), ids=list(LEGACY))
def test_an_older_environment_layout_reads_in_the_one_layout(layout: tuple[dict[str, Any], str, str]) -> None:
    raw, item, value = layout
    env = Environment.model_validate(raw)
    seen = {
        "gpu": env.gpu.name,
        "driver": env.driver,
        "cuda_runtime": env.cuda_runtime,
        "cupy": env.cupy,
        "cpu": env.host.cpu,
    }
    assert seen[item] == value
    assert summarize_environment(raw)[item] == value
    written = env.model_dump()
    legacy = {"gpu_name", "driver_version", "cuda", "cuda_runtime_version", "cupy_version", "cpu"}
    assert not legacy & set(written) and not {"driver", "driver_version"} & set(written.get("gpu", {}))


def test_the_layout_launchbench_writes_wins_over_an_older_one() -> None:
    env = Environment.model_validate(
        {"driver": "590", "driver_version": "580", "gpu": {"name": "A"}, "gpu_name": "B"}
    )
    assert (env.driver, env.gpu.name) == ("590", "A")


def test_the_overrides_hold_only_what_was_given() -> None:
    given = Overrides.model_validate({"max_time": 2.0, "passes": 3})
    assert given.max_time == 2.0 and given.target_noise is None
    assert given.given() == {"max_time": 2.0, "passes": 3}
    assert Settings().model_dump() == {} and Overrides().given() == {}
