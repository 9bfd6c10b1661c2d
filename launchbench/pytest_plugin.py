"""launchbench's pytest plugin: the ``launchbench`` fixture measures a chain (a YAML snippet: the chains
and sweep of a scenario; or a Python function, as a ``python`` step) eagerly and as a CUDA Graph through
launchbench.api.run, and returns the Run to assert on. ``--launchbench-save DIR`` keeps each test's run
in DIR/<test id>; ``--launchbench-compare DIR`` compares it with DIR/<test id> as ``launchbench compare``
does, and fails the test when a ``--launchbench-fail-on METRIC:N%`` rule finds a regression. Without a
GPU the fixture skips the test with the reason.

Loaded by every pytest run where launchbench is installed (the ``pytest11`` entry point): this module
imports only pytest and the standard library; launchbench's API and the GPU load when a test asks for the
fixture, and the options are checked only when given."""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from launchbench.analysis.gate import GateRule
    from launchbench.api import Allow, Comparison, Run

SAVE, COMPARE, FAIL_ON, ALLOW, BACKEND = (
    "--launchbench-save",
    "--launchbench-compare",
    "--launchbench-fail-on",
    "--launchbench-allow",
    "--launchbench-backend",
)
ALLOWED = ("missing", "empty", "interrupted", "disturbed", "blind", "different-gpu")  # api.Allow's


@dataclass(frozen=True)
class PluginSettings:
    """The plugin's options, checked: where runs are saved and compared, and the gate's rules."""

    save: Path | None = None
    compare: Path | None = None
    fail_on: tuple[str, ...] = ()
    allow: tuple[Allow, ...] = ()
    backend: str | None = None  # run's --backend ("module:function"): no GPU check when given


SETTINGS = pytest.StashKey[PluginSettings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("launchbench", "launchbench: kernel-launch benchmarks (the launchbench fixture)")
    group.addoption(SAVE, metavar="DIR", help="Keep each test's run in DIR/<test id> (a new directory).")
    group.addoption(
        COMPARE,
        metavar="DIR",
        help="Compare each test's run with the one saved in DIR/<test id>, as launchbench compare does.",
    )
    group.addoption(
        FAIL_ON,
        metavar="METRIC:N%",
        action="append",
        default=[],
        help="With --launchbench-compare: fail a test whose METRIC is slower than the saved run's by at "
        "least N%% (or METRIC:Nus); repeatable, as compare's --fail-on.",
    )
    group.addoption(
        ALLOW,
        metavar="WHAT",
        action="append",
        default=[],
        choices=ALLOWED,
        help=f"What the gate lets pass, as compare's --allow-* options ({', '.join(ALLOWED)}); repeatable.",
    )
    group.addoption(BACKEND, metavar="MODULE:FUNCTION", help="The backend, as run's --backend.")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SETTINGS] = settings_of(config)


def settings_of(config: pytest.Config) -> PluginSettings:
    """The options, checked (pytest.UsageError, one line, on a bad one)."""
    save, compare = config.getoption(SAVE), config.getoption(COMPARE)
    fail_on = tuple(config.getoption(FAIL_ON) or ())
    settings = PluginSettings(
        save=Path(save) if save else None,
        compare=Path(compare) if compare else None,
        fail_on=fail_on,
        allow=tuple(config.getoption(ALLOW) or ()),
        backend=config.getoption(BACKEND),
    )
    if fail_on and settings.compare is None:
        raise pytest.UsageError(f"{FAIL_ON} needs {COMPARE} DIR: the saved runs to compare with")
    if settings.compare is not None and not settings.compare.is_dir():
        raise pytest.UsageError(f"{COMPARE} {settings.compare}: no such directory (reading the saved runs)")
    kept, saved = settings.save, settings.compare
    if kept is not None and saved is not None and kept.resolve() == saved.resolve():
        raise pytest.UsageError(f"{SAVE} and {COMPARE} name one directory, {settings.save}")
    for text in fail_on:
        parse_fail_on(text)
    return settings


def parse_fail_on(text: str) -> GateRule:
    """A --launchbench-fail-on rule, as compare's --fail-on parses it (pytest.UsageError when it cannot)."""
    from launchbench.analysis.gate import parse_rule
    from launchbench.errors import LaunchbenchError

    try:
        return parse_rule(text)
    except LaunchbenchError as err:
        reason = re.sub(r"^--fail-on '[^']*': ", "", str(err))  # the rule is named once, as given here
        raise pytest.UsageError(f"{FAIL_ON} {text}: {reason}") from None


def gpu_problem() -> str | None:
    """Why no GPU can be measured on here (CuPy missing, no CUDA device), or None."""
    try:
        import cupy
    except Exception as err:  # noqa: BLE001 - any failure to import is a reason to skip
        return f"CuPy is not importable ({type(err).__name__})"
    try:
        if not cupy.is_available():
            return "CuPy sees no CUDA device"
    except Exception as err:  # noqa: BLE001
        return f"CUDA is not usable ({err})"
    return None


def run_name(node_id: str) -> str:
    """A test's folder name under DIR: its id with every run of other characters as one '_'."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", node_id).strip("_") or "test"


Chain = str | Mapping[str, Any] | Callable[..., Any]


def scenario_of(chain: Chain, name: str, args: Mapping[str, Any], launches: int) -> dict[str, Any]:
    """The scenario a chain stands for: a YAML snippet or mapping (chains, sweep, measure, ...) with a
    name and description, or a module-level function as one ``python`` step."""
    if callable(chain):
        return {
            "name": name,
            "description": f"{callable_spec(chain)} as a python step",
            "chain": [
                {"kind": "python", "callable": callable_spec(chain), "args": dict(args), "launches": launches}
            ],
        }
    import yaml

    snippet = yaml.safe_load(chain) if isinstance(chain, str) else dict(chain)
    if not isinstance(snippet, dict):
        raise TypeError(
            f"launchbench.measure: the YAML snippet holds a {type(snippet).__name__}, not a mapping"
        )
    return {"name": name, "description": f"the chain of {name}", **snippet}


def callable_spec(function: Callable[..., Any]) -> str:
    """The "module:function" of a function a worker process can import: one defined at a module's top level."""
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or getattr(sys.modules.get(module), name, None) is not function:
        raise TypeError(
            f"launchbench.measure: {name or function!r} is not a function at the top level of an importable "
            "module; the python step imports it by 'module:function'"
        )
    return f"{module}:{name}"


@dataclass
class LaunchbenchFixture:
    """What the ``launchbench`` fixture gives a test: ``measure`` a chain, the runs it made and their
    comparisons with the saved runs."""

    node_id: str
    settings: PluginSettings
    scratch: Path
    runs: list[Run] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)

    def measure(
        self, chain: Chain, *, args: Mapping[str, Any] | None = None, launches: int = 1, **run_settings: Any
    ) -> Run:
        """Measure ``chain`` eagerly and as a CUDA Graph; ``args``/``launches`` are a function's python-step
        arguments and launches per call; ``run_settings`` are launchbench.api.run's (max_time, passes,
        target_noise, min_samples, quick, device, isolate). With --launchbench-compare, the run is compared
        with the saved one and the test fails on a --launchbench-fail-on regression."""
        from launchbench import api
        from launchbench.errors import LaunchbenchError

        name = run_name(self.node_id) + (f"-{len(self.runs) + 1}" if self.runs else "")
        scenario = scenario_of(chain, name[-100:].lstrip("-_.") or "test", args or {}, launches)
        out_dir = (self.settings.save or self.scratch) / name
        options = {"backend": self.settings.backend, **run_settings}
        try:
            run = api.run(scenario, out_dir=out_dir, **options)
        except LaunchbenchError as err:
            pytest.fail(f"launchbench: {err}", pytrace=False)
        self.runs.append(run)
        if self.settings.compare is not None:
            self._compare(run, self.settings.compare / name)
        return run

    def _compare(self, run: Run, saved: Path) -> None:
        """The run against the saved one; the test fails on a regression the rules find."""
        from launchbench import api

        if not saved.exists():
            warnings.warn(
                pytest.PytestWarning(f"launchbench: no saved run {saved} to compare with (reading)"),
                stacklevel=3,
            )
            return
        comparison = api.compare(saved, run, fail_on=self.settings.fail_on, allow=self.settings.allow)
        self.comparisons.append(comparison)
        if comparison.gate is not None and not comparison.passed:
            lines = [f"{check.subject} {check.rule}: {check.message}" for check in comparison.gate.failures]
            pytest.fail(f"launchbench: regressed against {saved}:\n" + "\n".join(lines), pytrace=False)


@pytest.fixture
def launchbench(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> LaunchbenchFixture:
    """Measure a chain eagerly and as a CUDA Graph: ``launchbench.measure(yaml_or_function, ...)``
    returns a launchbench.api.Run (``.speedup("graph")``, ``.outputs_match``, ``.case(id)``, ``.table()``).
    Skips the test without a GPU."""
    settings = request.config.stash[SETTINGS]
    if settings.backend is None and (problem := gpu_problem()) is not None:
        pytest.skip(f"launchbench: needs a GPU: {problem}")
    return LaunchbenchFixture(request.node.nodeid, settings, tmp_path_factory.mktemp("launchbench"))
