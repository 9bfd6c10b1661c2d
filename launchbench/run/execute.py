"""One case from start to result: prepare on the backend, measure both modes in interleaved rounds,
check the graph's outputs against eager ones, and assemble the CaseResult. Never prints."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from launchbench.backend.base import Backend, CaseRefused, KeepsModeGraphs, OutputCheck, PreparedCase
from launchbench.errors import LaunchbenchError
from launchbench.kinds.registry import spec_of
from launchbench.kinds.torch_step import holds_torch
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import ModeSamples, Sampler, SamplingOutcome
from launchbench.measure.stopping import ModeSpread, spread_rule
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    TORCH_MODES,
    WALL,
    CaseResult,
    Clocks,
    GraphLifecycle,
    HostData,
    Mode,
    ModePass,
    ModeResult,
    PassClocks,
    ShapeCounts,
    ShapeInfo,
)
from launchbench.results.thread_place import ROOT, pci_node, thread_place
from launchbench.run.profile import CaseTimes
from launchbench.run.protocol import run_through
from launchbench.scenario.core import Case

Progress = Callable[[float], None]

IDENTITY_FIELDS = ("scenario", "case_id", "chain", "kinds", "params", "launches_per_iter")


def host_data(gpu_address: str | None = None, root: Path = ROOT) -> HostData:
    """This process, the host's load, where the launching thread runs and the NUMA node of the GPU at
    ``gpu_address`` (its PCI bus id), as a pass begins; ``root``: where /proc and /sys are."""
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:  # not every platform has a load average
        load = None
    return HostData(
        pid=os.getpid(), load_1m=load, start=thread_place(root), gpu_node=pci_node(gpu_address, root)
    )


def pass_ended(host: HostData, root: Path = ROOT) -> HostData:
    """The pass's host data with where the launching thread runs as the pass ends."""
    return host.model_copy(update={"end": thread_place(root)})


def mode_result(
    mode: str,
    samples: ModeSamples,
    host: HostData,
    lifecycle: GraphLifecycle | None = None,
    shapes: ShapeCounts | None = None,
) -> ModeResult:
    """One pass of one mode."""
    series = {WALL: samples.wall, CPU: samples.cpu, GPU: samples.gpu, LATENCY: samples.latency}
    one = ModePass(
        iters_per_sample=samples.iters_per_sample,
        samples={key: values for key, values in series.items() if values},
        throttled_samples=samples.throttled,
        target_met=samples.target_met,
        lifecycle=lifecycle,
        clocks=PassClocks(sm_mhz=samples.sm_mhz, throttle_reasons=sorted(samples.throttle_reasons)),
        host=host,
        shapes=shapes,
    )
    return ModeResult(mode=mode, status="ok" if samples.target_met else "budget", passes=[one])


def expected_nodes(case: Case) -> int | None:
    """Graph nodes the chain must produce, where every step kind has a known node count per launch (and
    the chain runs on one stream: the fork/join events of a multi-stream chain may add nodes)."""
    if any(step.stream for step in case.steps):
        return None
    nodes = 0
    for step in case.steps:
        spec = spec_of(step)
        if spec.graph_nodes is not None:
            nodes += spec.graph_nodes(step)
            continue
        if spec.nodes_per_launch is None:
            return None
        nodes += spec.nodes_per_launch * step.launches()
    return nodes


def shape_info(case: Case) -> ShapeInfo | None:
    """How a shape-changing case's sizes change, as its results record it."""
    plan = case.shapes
    if plan is None:
        return None
    return ShapeInfo(
        param=plan.param,
        values=list(plan.values),
        per_shape=plan.per_shape,
        order=plan.order,
        cache_limit=plan.cache_limit,
        launches=list(plan.launches),
    )


def case_modes(case: Case) -> tuple[Mode, ...]:
    """The modes a case is measured in: eager and graph (and torch_graph where the chain holds torch
    steps), or eager and the shape strategies."""
    if case.shapes is not None:
        return cast("tuple[Mode, ...]", ("eager", *case.shapes.strategies))
    return ("eager", "graph", *TORCH_MODES) if holds_torch(case.steps) else ("eager", "graph")


def mode_graph(prepared: PreparedCase, mode: str) -> tuple[GraphLifecycle | None, str | None]:
    """A graph mode's life cycle and why it is absent: from the prepared case's per-mode records where
    it keeps them (a torch chain's, backend/torch_graph.py), else the CuPy graph's."""
    lifecycles: dict[str, GraphLifecycle] = {}
    failures: dict[str, str] = {}
    if isinstance(prepared, KeepsModeGraphs):
        lifecycles, failures = prepared.mode_lifecycles, prepared.mode_failures
    lifecycle = prepared.lifecycle if mode == "graph" else None
    return lifecycles.get(mode, lifecycle), failures.get(mode, prepared.graph_failure)


def case_identity(case: Case) -> dict[str, object]:
    """The fields every CaseResult of this case carries, measured or not."""
    return {**{name: getattr(case, name) for name in IDENTITY_FIELDS}, "shapes": shape_info(case)}


def failed_case(
    case: Case, message: str, status: str = "failed", elapsed: float = 0.0, kind: str = "runtime"
) -> CaseResult:
    """A result that records why a case could not be measured (a runtime fault unless ``kind`` says else)."""
    modes = {mode: ModeResult(mode=mode, status=status, reason=message) for mode in case_modes(case)}
    return CaseResult(**case_identity(case), modes=modes, error=message, error_kind=kind, elapsed_s=elapsed)


def _verify_nodes(case: Case, check: OutputCheck, nodes: int | None) -> OutputCheck:
    expected = expected_nodes(case)
    if expected is None or nodes is None:
        return check
    if nodes != expected:
        return OutputCheck(False, f"graph holds {nodes} nodes; the chain launched {expected}")
    if check.match is None:
        return OutputCheck(True, f"no buffers written; graph holds {nodes} nodes, one per launch")
    return OutputCheck(check.match, f"{check.detail}; {nodes} graph nodes, one per launch")


@dataclass
class HarnessCosts:
    """The timing loop's own cost per iteration, measured once per process and ``max_in_flight``: it
    is the cost of the process's loop around an empty call on the backend's stream, the same for every
    case the process runs, so a worker measures it for its first case and reuses it."""

    measured: dict[int, float] = field(default_factory=dict)

    def of(self, prepared: PreparedCase, max_in_flight: int) -> float:
        if max_in_flight not in self.measured:
            self.measured[max_in_flight] = prepared.harness_cost()
        return self.measured[max_in_flight]


@dataclass(frozen=True)
class PassContext:
    """What one case-pass is measured with besides its case: the spread of its modes' earlier passes
    (the stopping rule stops a mode once its CI is small against it: stopping.SpreadShare) and the
    process's harness costs."""

    spreads: Mapping[str, ModeSpread] = field(default_factory=dict)
    harness: HarnessCosts = field(default_factory=HarnessCosts)


class CaseSession:
    """One prepared case, sampled a round at a time (a CasePass) (``launchbench ab`` alternates the rounds of two
    processes); ``finish`` checks the outputs and assembles the result, ``close`` frees the case."""

    def __init__(
        self,
        backend: Backend,
        case: Case,
        clock: Clock,
        prepared: PreparedCase,
        progress: Progress,
        prepare_s: float = 0.0,
        context: PassContext | None = None,
    ):
        """``prepare_s``: the seconds ``backend.prepare`` took (for ``times``)."""
        self.case, self.clock, self.prepared = case, clock, prepared
        self.start = clock.wall()
        self.host = host_data(backend.pci_address)
        self.times = CaseTimes(prepare_s)
        context = context or PassContext()
        rule = spread_rule(case.measure, context.spreads) if context.spreads else None
        try:
            self.harness = context.harness.of(prepared, case.measure.max_in_flight)
            sampler = Sampler(case.measure, clock, backend.monitor, rule)
            self.sampling = sampler.start(prepared.workloads, progress)
        except BaseException:
            prepared.close()
            raise

    @property
    def done(self) -> bool:
        return self.sampling.done

    def round(self) -> bool:
        """One sampling round; whether sampling is done."""
        return self.sampling.round()

    def finish(self) -> CaseResult:
        """The case's result (the case is closed afterwards)."""
        try:
            outcome = self.sampling.finish()
            checking = self.clock.wall()
            prepared = self.prepared
            counts = prepared.shape_counts()  # before the output check walks the shapes
            host = pass_ended(self.host)
            check = prepared.check_outputs()
            if self.case.shapes is None:
                check = _verify_nodes(
                    self.case, check, prepared.lifecycle.nodes if prepared.lifecycle else None
                )
            result = _case_result(
                self.case, outcome, check, prepared, host, self.harness, self.clock, self.start, counts
            )
            self.times = CaseTimes(self.times.prepare_s, self.sampling.phases, self.clock.wall() - checking)
            return result
        finally:
            self.close()

    def close(self) -> None:
        self.prepared.close()


def start_case(
    backend: Backend,
    case: Case,
    clock: Clock,
    progress: Progress | None = None,
    context: PassContext | None = None,
) -> CaseSession | CaseResult:
    """Prepare the case and calibrate its sampling (under ``context``); a CaseResult instead when it
    cannot run (refused for resources, or the scenario's own fault)."""
    start = clock.wall()
    try:
        prepared = backend.prepare(case)
    except CaseRefused as err:
        return failed_case(case, str(err), status="skipped", elapsed=clock.wall() - start, kind="resources")
    except LaunchbenchError as err:  # the scenario's fault: a kernel that does not compile, a bad callable
        where = f"{case.source}: case {case.case_id}: " if case.source else ""
        return failed_case(case, f"{where}{err}", elapsed=clock.wall() - start, kind="input")
    quiet = progress or (lambda _f: None)
    return CaseSession(backend, case, clock, prepared, quiet, clock.wall() - start, context)


def execute_case(backend: Backend, case: Case, clock: Clock, progress: Progress | None = None) -> CaseResult:
    """Prepare, sample until done, check and assemble: one pass of one case."""
    session = start_case(backend, case, clock, progress)
    return session if isinstance(session, CaseResult) else run_through(session)


def _case_result(
    case: Case,
    outcome: SamplingOutcome,
    check: OutputCheck,
    prepared: PreparedCase,
    host: HostData,
    harness: float,
    clock: Clock,
    start: float,
    counts: dict[str, ShapeCounts],
) -> CaseResult:
    failed = set(check.failed_modes) or ({"graph"} if check.match is False else set())
    modes: dict[Mode, ModeResult] = {}
    for mode in case_modes(case):
        lifecycle, graph_failure = mode_graph(prepared, mode)
        if mode not in outcome.modes:  # a graph mode that could not be prepared
            modes[mode] = ModeResult(mode=mode, status="not_capturable", reason=graph_failure)
            continue
        result = mode_result(mode, outcome.modes[mode], host, lifecycle=lifecycle, shapes=counts.get(mode))
        if mode in failed:
            result = result.model_copy(update={"status": "failed", "reason": check.detail})
        modes[mode] = result
    reading = outcome.clocks
    clocks = Clocks(
        sm_mhz=reading.sm_mhz if reading else None,
        mem_mhz=reading.mem_mhz if reading else None,
        throttle_reasons=list(outcome.throttle_reasons),
        settle_s=outcome.settle_s,
    )
    return CaseResult(
        **case_identity(case),
        modes=modes,
        outputs_match=check.match,
        check_detail=check.detail,
        clocks=clocks,
        harness_s_per_iter=harness,
        elapsed_s=clock.wall() - start,
        error=check.detail if check.match is False else None,
        error_kind="mismatch" if check.match is False else None,
    )
