from pathlib import Path

import pytest
from click.testing import CliRunner

from launchbench.cli import cli

ROOT = Path(__file__).parents[2]


def cupy_missing() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return True
    return False


@pytest.mark.skipif(not cupy_missing(), reason="checks the message given where CuPy is not installed")
def test_run_without_gpu_exits_2_with_one_sentence(tmp_path, capfd):
    """The sentence that says what to install; the worker process's own output (on the file descriptors
    it inherits) holds no traceback either. As a real process: tests/cli/test_refusals.py."""
    quickstart = str(ROOT / "scenarios" / "quickstart.yaml")
    result = CliRunner().invoke(cli, ["run", quickstart, "--out-dir", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output + "".join(capfd.readouterr())
    assert "CuPy is not installed" in result.stderr and "pip install" in result.stderr
    assert not (tmp_path / "r").exists()  # nothing is created when nothing can be measured


def test_validate_quickstart():
    result = CliRunner().invoke(cli, ["validate", str(ROOT / "scenarios" / "quickstart.yaml")])
    assert result.exit_code == 0
    assert "8 cases" in result.output


def test_every_scenario_in_the_repo_validates():
    files = sorted((ROOT / "scenarios").glob("*.yaml"))
    assert files
    result = CliRunner().invoke(cli, ["validate", *map(str, files)])
    assert result.exit_code == 0, result.output


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and "launchbench" in result.output


def test_run_requires_a_scenario():
    assert CliRunner().invoke(cli, ["run"]).exit_code == 2


def test_run_check_prints_the_notes_that_check_prints(tmp_path):
    """`run --check` and `check` share gate.check_against_scenarios: a recorded scenario file that is
    gone is a note in both (it was dropped by `run --check`)."""
    import io

    from rich.console import Console

    from launchbench.cli import run as cli_run
    from launchbench.results.store import load_run

    record = load_run(Path(__file__).parents[1] / "data" / "h200" / "quickstart-a")
    gone = record.scenarios[0].model_copy(update={"file": str(tmp_path / "moved.yaml")})
    here = record.scenarios[0].model_copy(
        update={"file": str(Path(__file__).parents[2] / "scenarios" / "quickstart.yaml")}
    )
    record = record.model_copy(update={"scenarios": [here, gone]})
    out = io.StringIO()
    assert cli_run._check_expectations(record, Console(file=out, width=200)) == 0
    assert "moved.yaml" in out.getvalue() and "is not found" in out.getvalue()


def test_run_plot_into_a_folder_it_cannot_write_is_an_input_error(tmp_path):
    from launchbench.errors import LaunchbenchError
    from launchbench.report.plots import write_all_plots
    from launchbench.results.store import load_run

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    record = load_run(Path(__file__).parents[1] / "data" / "h200" / "quickstart-a")
    with pytest.raises(LaunchbenchError, match="cannot write figures"):
        write_all_plots([record], blocker / "plots")


def test_run_summary_shows_every_case_and_the_cost_model(tmp_path):
    import io

    from rich.console import Console

    from launchbench.report.console import print_summary
    from launchbench.results.store import load_run

    record = load_run(Path(__file__).parents[1] / "data" / "h200" / "quickstart-a")
    out = io.StringIO()
    print_summary(Console(file=out, width=250), record, tmp_path)
    text = out.getvalue()
    assert all(case.case_id in text for case in record.cases)
    assert "cost model" in text and "empty: eager 5.378" in text and "graph 0.497" in text


def test_run_summary_and_check_read_the_table_the_run_wrote(tmp_path, monkeypatch):
    """The results table a run writes at its end is the one its summary and --check read: it is not
    built again once the run is over (on a run of a thousand cases that is seconds)."""
    import csv
    import functools

    from fakes import scripted_backend

    import launchbench.report.run_files  # noqa: F401  (the writer holds the real run_table)
    from launchbench.analysis import table
    from launchbench.run import runner

    factory = functools.partial(runner.RunOptions, backend_factory=scripted_backend)
    monkeypatch.setattr(runner, "RunOptions", factory)
    built_after, build = [], table.run_table
    monkeypatch.setattr(table, "run_table", lambda run, *args: built_after.append(run) or build(run, *args))
    out = tmp_path / "r"
    scenario = Path(__file__).parents[1] / "data" / "scripted" / "three.yaml"
    result = CliRunner().invoke(cli, ["run", "--no-isolate", "--check", "-d", str(out), str(scenario)])
    assert result.exit_code == 0, result.output
    assert built_after == []
    with open(out / "results.csv", newline="") as handle:
        cases = {row["case"] for row in csv.DictReader(handle)}
    assert cases and all(case in result.stdout for case in cases)


def test_run_check_shows_the_table_that_check_shows(tmp_path):
    """`run --check` renders its report with `check`'s renderer: same table, same verdict line, exit 1 on a
    failed expectation."""
    import io

    from rich.console import Console

    from launchbench.analysis.gate import check_against_scenarios
    from launchbench.cli import run as cli_run
    from launchbench.report.compare_console import render_checks
    from launchbench.results.store import load_run

    strict = tmp_path / "quickstart.yaml"
    text = (ROOT / "scenarios" / "quickstart.yaml").read_text(encoding="utf-8")
    strict.write_text(text.replace("max: 1.0", "max: 0.1"), encoding="utf-8")
    record = load_run(Path(__file__).parents[1] / "data" / "h200" / "quickstart-a")
    record = record.model_copy(
        update={"scenarios": [record.scenarios[0].model_copy(update={"file": str(strict)})]}
    )

    shown, expected = io.StringIO(), io.StringIO()
    assert cli_run._check_expectations(record, Console(file=shown, width=200)) == 1
    render_checks(Console(file=expected, width=200), check_against_scenarios(record))
    assert shown.getvalue() == expected.getvalue()
    assert "expectations" in shown.getvalue() and "FAIL: 1 of 2 checks failed" in shown.getvalue()
    assert "wall_us_per_launch ≤ 0.1" in shown.getvalue() and "expected ≤ 0.1" in shown.getvalue()


@pytest.mark.parametrize("device", ["--device=1", "--device=0"])
def test_run_refuses_device_with_devices(tmp_path, device):
    """--devices names the GPUs: a --device beside it (even the default's value) is refused, not ignored."""
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(ROOT / "scenarios" / "quickstart.yaml"),
            "--devices",
            "0,1",
            device,
            "-d",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("launchbench: error: "), result.stderr
    assert "--devices 0,1" in result.stderr and "leave --device out" in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("isolate", [True, False])
def test_run_starts_the_workers_server_before_loading_the_scenarios(tmp_path, monkeypatch, isolate):
    """With worker processes, ``run`` starts their fork server first, so its imports overlap the
    scenarios' loading; in this process (--no-isolate) there is none to start."""
    import launchbench.cli.run as run_module
    import launchbench.run.worker_start as worker_start

    calls = []
    monkeypatch.setattr(worker_start, "worker_context", lambda: calls.append("server"))

    def planned(*args):
        calls.append("plan")
        raise RuntimeError("stop after planning")

    monkeypatch.setattr(run_module, "_planned", planned)
    quickstart = str(ROOT / "scenarios" / "quickstart.yaml")
    options = [] if isolate else ["--no-isolate"]
    result = CliRunner().invoke(cli, ["run", quickstart, *options, "--out-dir", str(tmp_path / "r")])
    assert isinstance(result.exception, RuntimeError)
    assert calls == (["server", "plan"] if isolate else ["plan"])


def test_run_starts_its_first_worker_before_importing_the_tables_and_the_console(tmp_path, monkeypatch):
    """The first worker is spawned and asked to start its backend before the tables' and the console's
    imports, and the run measures with that executor; one the run never got is closed."""
    import launchbench.cli.run as run_module
    import launchbench.report.terminal as terminal
    import launchbench.run.runner as runner

    calls, executors, processes = [], [], []
    real_early, real_console = runner.early_executor, terminal.make_console

    def early(options):
        calls.append("first worker")
        executors.append(real_early(options))
        executors[-1]._spawning.join()
        processes.append(executors[-1]._first.process)  # spawned, asked to start its backend
        return executors[-1]

    def console(*args, **kwargs):
        calls.append("console")
        return real_console(*args, **kwargs)

    def measured(*args):
        calls.append("run")
        assert args[-1] is executors[0]
        raise RuntimeError("stop before measuring")

    monkeypatch.setattr(runner, "early_executor", early)
    monkeypatch.setattr(terminal, "make_console", console)
    monkeypatch.setattr(run_module, "_measured", measured)
    quickstart = str(ROOT / "scenarios" / "quickstart.yaml")
    backend = ["--backend", "tests.fakes:scripted_backend"]
    result = CliRunner().invoke(cli, ["run", quickstart, *backend, "--out-dir", str(tmp_path / "r")])
    assert isinstance(result.exception, RuntimeError), result.output
    assert calls == ["first worker", "console", "run"]
    assert executors[0]._first is None and not processes[0].is_alive()  # closed: its worker stopped
