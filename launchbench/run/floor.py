"""``launchbench floor``: the layers of a ``floor:`` block, each measured in a fresh process of its own
(``processes: layer``, the default: a layer's cases built there and sampled in interleaved rounds by one
sampler session), or, with ``processes: shared``, every layer but torch built in this process and
sampled together (so a drift of the host moves every layer alike) and torch's in a fresh process of its
own; the outcome stored as a run: a case per layer and argument count, its eager and graph modes. A
layer that cannot run here is recorded with its modes skipped and the reason. Never prints."""

from __future__ import annotations

import datetime as _dt
import hashlib
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from launchbench import __version__
from launchbench.backend.floor.base import FloorContext, LayerWorkloads
from launchbench.backend.gpu_probe import collect_environment, require_gpu
from launchbench.backend.nvml import NvmlMonitor
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import Sampler, SamplingOutcome, Workload
from launchbench.results.metadata import Environment, Overrides
from launchbench.results.schema import (
    MODES,
    CaseResult,
    Clocks,
    HostData,
    ModeResult,
    RunRecord,
    ScenarioInfo,
)
from launchbench.results.store import write_run
from launchbench.run.child_env import source_first
from launchbench.run.execute import host_data, mode_result, pass_ended
from launchbench.scenario.core import MeasureSettings, with_overrides
from launchbench.scenario.floor import ARG_LAYERS, Floor, Layer
from launchbench.scenario.load import ScenarioFile

KINDS = "floor"  # the results' ``kinds`` of every floor case
APART_LAYERS: tuple[Layer, ...] = ("torch",)  # in a fresh process of their own under processes: shared
APART_START_S = 120.0  # what a process of its own may take beyond four times its budget: imports, builds


@dataclass(frozen=True)
class FloorCase:
    """One layer at one argument count (None for a layer that launches its own fixed kernel)."""

    layer: Layer
    args: int | None

    @property
    def case_id(self) -> str:
        return self.layer if self.args is None else f"{self.layer}/args={self.args}"


@dataclass(frozen=True)
class FloorRequest:
    """What to measure (``spec``, under the scenario ``scenario``) and how (``measure``: the sampler's
    settings; its ``max_time`` is replaced by the floor's budget), on ``device``."""

    spec: Floor
    scenario: ScenarioInfo
    measure: MeasureSettings
    device: int = 0


def plan(spec: Floor) -> list[FloorCase]:
    """The cases, in stacking order: each layer at each argument count where it takes the axis."""
    return [
        FloorCase(layer, args)
        for layer in spec.layers
        for args in (spec.args if layer in ARG_LAYERS else [None])
    ]


def built_in_scenario(spec: Floor) -> ScenarioInfo:
    """The scenario a floor run without a scenario file records: its block's settings, hashed."""
    text = spec.model_dump_json()
    return ScenarioInfo(
        name="floor",
        description="the launch path layer by layer (launchbench floor's defaults)",
        file="(built in)",
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )


def _build(
    ctx: FloorContext, cases: Sequence[FloorCase]
) -> tuple[dict[FloorCase, LayerWorkloads], dict[FloorCase, str]]:
    from launchbench.backend.floor.build import build_layer  # CuPy: only once a GPU is known to be there

    built: dict[FloorCase, LayerWorkloads] = {}
    skipped: dict[FloorCase, str] = {}
    for case in cases:
        try:
            built[case] = build_layer(ctx, case.layer, case.args or 0)
        except Exception as exc:  # noqa: BLE001 - any layer that cannot run is recorded with why, not fatal
            skipped[case] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            ctx.end_failed_capture()
    return built, skipped


def case_result(
    request: FloorRequest,
    case: FloorCase,
    built: LayerWorkloads | None,
    reason: str | None,
    outcome: SamplingOutcome | None,
    host: HostData,
) -> CaseResult:
    modes: dict[str, ModeResult] = {}
    for mode in MODES:
        key = f"{case.case_id}|{mode}"
        if built is not None and outcome is not None and key in outcome.modes:
            modes[mode] = mode_result(mode, outcome.modes[key], host)
        else:
            why = reason or (built.absent_reason if built is not None else None) or "not measured"
            modes[mode] = ModeResult(mode=mode, status="skipped", reason=why)
    params: dict[str, object] = {"layer": case.layer}
    if case.args is not None:
        params["args"] = case.args
    return CaseResult(
        scenario=request.scenario.name,
        case_id=case.case_id,
        chain=case.layer,
        kinds=KINDS,
        params=params,
        launches_per_iter=built.launches_per_iter if built is not None else request.spec.nodes,
        modes=modes,
        clocks=_clocks(outcome),
    )


def _clocks(outcome: SamplingOutcome | None) -> Clocks:
    if outcome is None or outcome.clocks is None:
        return Clocks()
    reading = outcome.clocks
    return Clocks(
        sm_mhz=reading.sm_mhz,
        mem_mhz=reading.mem_mhz,
        throttle_reasons=list(outcome.throttle_reasons),
        settle_s=outcome.settle_s,
    )


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _session(
    request: FloorRequest,
    ctx: FloorContext,
    cases: list[FloorCase],
    settings: MeasureSettings,
    gpu_address: str | None,
) -> list[CaseResult]:
    """Build ``cases``, sample them in interleaved rounds, and return their results."""
    built, skipped = _build(ctx, cases)
    workloads: dict[str, Workload] = {
        f"{case.case_id}|{mode}": workload
        for case, layer in built.items()
        for mode, workload in layer.workloads.items()
    }
    host = host_data(gpu_address)
    monitor = NvmlMonitor.for_cuda_device(request.device)
    outcome = Sampler(settings, ctx.clock, monitor).run(workloads) if workloads else None
    host = pass_ended(host)
    return [case_result(request, case, built.get(case), skipped.get(case), outcome, host) for case in cases]


def measure_cases(
    request: FloorRequest, cases: list[FloorCase], clock: Clock, gpu_address: str | None, max_time: float
) -> dict[FloorCase, CaseResult]:
    """``cases`` built in this process and sampled together in interleaved rounds within ``max_time``
    seconds (their share of the block's)."""
    from launchbench.backend.floor.build import open_context  # CuPy: only once a GPU is known to be there

    spec = request.spec
    ctx = open_context(
        request.device, clock, spec.args, spec.nodes, spec.gpu_nodes, request.measure.max_in_flight
    )
    settings = request.measure.model_copy(update={"max_time": max_time})
    try:
        return dict(zip(cases, _session(request, ctx, cases, settings, gpu_address), strict=True))
    finally:
        ctx.close()


@dataclass(frozen=True)
class ApartTask:
    """What a process of its own measures (run/floor_process.py): ``cases`` of ``request``, within
    ``max_time`` seconds."""

    request: FloorRequest
    cases: list[FloorCase]
    gpu_address: str | None
    max_time: float


def measure_apart(
    request: FloorRequest, cases: list[FloorCase], gpu_address: str | None, max_time: float
) -> dict[FloorCase, CaseResult]:
    """``cases`` measured in a fresh Python process of their own (``python -m
    launchbench.run.floor_process``) within ``max_time`` seconds; each case failed, with the process's
    last words, where it ends without its results."""
    with tempfile.TemporaryDirectory(prefix="launchbench-floor-") as work:
        task, answer = Path(work) / "task.pickle", Path(work) / "results.pickle"
        task.write_bytes(pickle.dumps(ApartTask(request, cases, gpu_address, max_time)))
        command = [sys.executable, "-m", "launchbench.run.floor_process", str(task), str(answer)]
        limit = APART_START_S + 4 * max_time
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=False,
                timeout=limit,
                env=source_first(),
            )
            said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            said = f"it did not end within {limit:.0f} s"
        if answer.is_file():
            return dict(zip(cases, pickle.loads(answer.read_bytes()), strict=True))
    return dict(zip(cases, failed_cases(request, cases, f"the {cases[0].layer} layer's process: {said}")))


def in_this_process(spec: Floor, layer: Layer) -> bool:
    """Whether ``layer`` is measured in the floor command's own process: under ``processes: shared``,
    every layer but torch; under ``processes: layer``, none."""
    return spec.processes == "shared" and layer not in APART_LAYERS


def floor_results(request: FloorRequest, clock: Clock, gpu_address: str | None) -> list[CaseResult]:
    """Every case of the floor block, results in the block's order, each layer's cases with their share
    of the block's ``max_time``. Under ``processes: layer`` each layer is measured in a fresh process of
    its own, one after another in the block's order: a layer's loop reads slower in a process that has
    run other layers' loops first (a bare process running every Python layer but torch one after the other read 5-16%
    above one process per layer on 8 of 17 rows on the H200; docs/floor.md). Under ``processes: shared``
    every layer but torch is measured in this process, interleaved in rounds, and torch's in a fresh
    process of its own afterwards (a bare torch loop in a process that has run CuPy's layers first reads
    about 10% slower per graph replay)."""
    require_gpu(request.device)
    spec = request.spec
    cases = plan(spec)
    share = spec.max_time / len(cases)  # of the block's budget, per case
    here = [case for case in cases if in_this_process(spec, case.layer)]
    results: dict[FloorCase, CaseResult] = {}
    if here:
        results.update(measure_cases(request, here, clock, gpu_address, share * len(here)))
    for layer in spec.layers:
        apart = [case for case in cases if case.layer == layer and not in_this_process(spec, layer)]
        if apart:
            results.update(measure_apart(request, apart, gpu_address, share * len(apart)))
    return [results[case] for case in cases]


def measure_floor(request: FloorRequest, clock: Clock) -> RunRecord:
    """Build every layer, sample them in interleaved rounds, return the run (status complete)."""
    require_gpu(request.device)
    spec = request.spec
    started = _now()
    environment = collect_environment(request.device)
    results = floor_results(request, clock, Environment.of(environment).gpu.pci_address)
    settings = request.measure.model_copy(update={"max_time": spec.max_time})
    return RunRecord(
        launchbench_version=__version__,
        status="complete",
        started=started,
        finished=_now(),
        argv=list(sys.argv),
        environment=environment,
        settings={
            "overrides": {},
            "isolate": False,
            "device": request.device,
            "floor": spec.model_dump(),
            "measure": settings.model_dump(),
        },
        scenarios=[request.scenario],
        cases=results,
    )


FloorMeasure = Callable[[FloorRequest, str | None], list[CaseResult]]  # (request, the GPU's PCI address)


def one_round(request: FloorRequest) -> FloorRequest:
    """The request as one of its ``measure.passes`` rounds measures it (``launchbench ab``): the block's
    time budget and the sample counts split among the rounds, as a case's among its passes."""
    rounds = request.measure.passes
    spec = request.spec.model_copy(update={"max_time": request.spec.max_time / rounds})
    return FloorRequest(spec, request.scenario, request.measure.one_pass(), request.device)


def failed_cases(request: FloorRequest, cases: Sequence[FloorCase], message: str) -> list[CaseResult]:
    """Each of ``cases``, failed with ``message`` (the process measuring them could not)."""
    failed = []
    for case in cases:
        result = case_result(request, case, None, message, None, HostData())
        modes = {name: mode.model_copy(update={"status": "failed"}) for name, mode in result.modes.items()}
        failed.append(result.model_copy(update={"modes": modes, "error": message, "error_kind": "runtime"}))
    return failed


def failed_floor(request: FloorRequest, message: str) -> list[CaseResult]:
    """Every case of the block, failed with ``message`` (the process measuring it could not)."""
    return failed_cases(request, plan(request.spec), message)


def measure_in_process(request: FloorRequest, gpu_address: str | None) -> list[CaseResult]:
    """The floor block's cases measured in this process, timed by the system clock."""
    from launchbench.measure.clock import SystemClock

    return floor_results(request, SystemClock(), gpu_address)


def floor_requests(
    files: Sequence[ScenarioFile], infos: Sequence[ScenarioInfo], overrides: Overrides, device: int
) -> list[FloorRequest]:
    """The floor: block of every scenario that has one, under its measure settings with the command
    line's overrides (which the run has already held to the file's)."""
    requests = []
    for loaded, info in zip(files, infos, strict=False):  # a plan made in code may hold no files
        spec = loaded.scenario.floor
        if spec is not None:
            measure = (
                with_overrides(loaded.scenario.measure, overrides.given())
                if overrides.given()
                else loaded.scenario.measure
            )
            requests.append(FloorRequest(spec, info, measure, device))
    return requests


def with_floors(
    record: RunRecord, requests: Sequence[FloorRequest], measure: FloorMeasure, gpu_address: str | None
) -> RunRecord:
    """``record`` with each request's floor cases (kind floor) added; a scenario whose floor cases the
    record holds already (a resumed run) keeps them."""
    for request in requests:
        if any(c.scenario == request.scenario.name and c.kinds == KINDS for c in record.cases):
            continue
        for result in measure(request, gpu_address):
            record = record.with_case(result)
    return record


def run_floor(request: FloorRequest, run_dir: Path, clock: Clock) -> RunRecord:
    """Measure the floor and write its results.json into ``run_dir`` (which must exist); NoGpuError
    (one line) where CuPy or the device is missing."""
    record = measure_floor(request, clock)
    write_run(run_dir, record)
    return record
