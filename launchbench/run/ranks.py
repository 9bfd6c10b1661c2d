"""A case on several GPUs: one rank per GPU, each in its own worker process, kept in step.

Rank 0 runs the sampler; every call it makes to a workload (a batch of iterations, a latency sample)
is first sent to every rank through the ranks' control channel (RankControl: a barrier that carries
rank 0's command), so every rank runs the same batches in the same order and their collectives pair
up. Every rank logs its own timings; a batch followed by a latency sample is a throughput sample (the
sampler takes them only that way), so every rank knows its samples without being told.

The parent (``RankGroup``) starts the ranks' workers, passes rank 0's NCCL unique id to the others,
and merges their results (``merge_ranks``): each pass's series become the whole step (per sample, the
slowest rank) and keep every rank's own series beside them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from launchbench.backend.base import Backend, CaseRefused, OutputCheck, PreparedCase, RankControl, RankInfo
from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import BatchTiming, Sampler, Workload
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    MEASURED_STATUSES,
    MODES,
    SAMPLE_KEYS,
    WALL,
    CaseResult,
    GraphLifecycle,
    HostData,
    Mode,
    ModePass,
    ModeResult,
    RankSamples,
)
from launchbench.run.execute import case_identity, failed_case, host_data, pass_ended
from launchbench.run.protocol import (
    Answer,
    NcclId,
    ProgressReport,
    RankCommand,
    RankTask,
    RankVerb,
    Result,
    run_through,
)
from launchbench.scenario.core import Case


@dataclass
class RankLog:
    """One rank's timings, per mode index, in the order the commands came."""

    events: dict[int, list[BatchTiming | float]] = field(default_factory=dict)

    def batch(self, mode: int, timing: BatchTiming) -> None:
        self.events.setdefault(mode, []).append(timing)

    def latency(self, mode: int, seconds: float) -> None:
        self.events.setdefault(mode, []).append(seconds)

    def samples(self, mode: int) -> tuple[int, dict[str, list[float]]]:
        """(iterations per sample, series): every batch followed by a latency sample is one sample."""
        series: dict[str, list[float]] = {key: [] for key in SAMPLE_KEYS}
        iters = 1
        events = self.events.get(mode, [])
        for before, after in zip(events, events[1:]):
            if isinstance(before, BatchTiming) and not isinstance(after, BatchTiming):
                iters = before.iters
                series[WALL].append(before.wall_s / before.iters)
                series[CPU].append(before.cpu_s / before.iters)
                if before.gpu_s is not None:
                    series[GPU].append(before.gpu_s / before.iters)
                series[LATENCY].append(after)
        return iters, {key: values for key, values in series.items() if values}


class LeaderWorkload:
    """Rank 0's workload of one mode: every call is sent to every rank first, then run and logged."""

    def __init__(self, workload: Workload, mode: int, control: RankControl, log: RankLog):
        self.workload = workload
        self.launches_per_iter = workload.launches_per_iter
        self.mode = mode
        self.control = control
        self.log = log

    def run_batch(self, iters: int) -> BatchTiming:
        self.control.exchange(RankCommand(RankVerb.BATCH, self.mode, iters).wire())
        timing = self.workload.run_batch(iters)
        self.log.batch(self.mode, timing)
        return timing

    def run_latency(self) -> float:
        self.control.exchange(RankCommand(RankVerb.LATENCY, self.mode).wire())
        seconds = self.workload.run_latency()
        self.log.latency(self.mode, seconds)
        return seconds


def follow(workloads: Sequence[Workload], control: RankControl, log: RankLog) -> None:
    """A rank above 0: run what rank 0 sends until it says stop."""
    while True:
        command = RankCommand.from_wire(control.exchange(None))
        if command.verb is RankVerb.STOP:
            return
        workload = workloads[command.mode]
        if command.verb is RankVerb.BATCH:
            log.batch(command.mode, workload.run_batch(command.iters))
        else:
            log.latency(command.mode, workload.run_latency())


class RankPass:
    """This rank's part of one pass of a case on several GPUs, stepped round by round (a CasePass):
    rank 0 samples through LeaderWorkloads, so every call it makes reaches every rank; a rank above 0
    follows rank 0 in its one round until rank 0's finish says stop."""

    def __init__(self, case: Case, clock: Clock, prepared: PreparedCase, start: float, host: HostData):
        """``start``: when the pass began (before ``prepared`` was prepared); ``host``: the host data then."""
        self.case, self.clock, self.prepared, self.start, self.host = case, clock, prepared, start, host
        control = prepared.control
        if control is None:
            raise LaunchbenchError("the backend gave no control channel for a case on several GPUs")
        self.control = control
        common = control.common([int(mode in prepared.workloads) for mode in MODES])
        if "graph" in prepared.workloads and not common[MODES.index("graph")]:
            prepared.drop_graph("another rank could not capture its graph")
        self.order: list[Mode] = [mode for mode, flag in zip(MODES, common) if flag]
        self.workloads = [prepared.workloads[mode] for mode in self.order]
        self.harness = prepared.harness_cost()
        self.log = RankLog()
        self.sampling: Sampler | None = None
        self.followed = False

    def lead(self, sampler: Sampler, progress: Callable[[float], None]) -> None:
        """Rank 0: warm up, settle and calibrate through the leader workloads."""
        wrapped: dict[str, Workload] = {
            mode: LeaderWorkload(w, i, self.control, self.log)
            for i, (mode, w) in enumerate(zip(self.order, self.workloads))
        }
        self.sampling = sampler.start(wrapped, progress)

    @property
    def done(self) -> bool:
        return self.sampling.done if self.sampling is not None else self.followed

    def round(self) -> bool:
        if self.sampling is not None:
            return self.sampling.round()
        follow(self.workloads, self.control, self.log)
        self.followed = True
        return True

    def finish(self) -> CaseResult:
        statuses: dict[str, tuple[str, bool]] = {}
        try:
            if self.sampling is not None:
                outcome = self.sampling.finish()
                self.control.exchange(RankCommand(RankVerb.STOP).wire())
                statuses = {
                    mode: ("ok" if samples.target_met else "budget", samples.target_met)
                    for mode, samples in outcome.modes.items()
                }
            check = self.prepared.check_outputs()
            lifecycle, graph_failure = self.prepared.lifecycle, self.prepared.graph_failure
        finally:
            self.close()
        return self._result(statuses, check, lifecycle, graph_failure)

    def _result(
        self,
        statuses: dict[str, tuple[str, bool]],
        check: OutputCheck,
        lifecycle: GraphLifecycle | None,
        graph_failure: str | None,
    ) -> CaseResult:
        host = pass_ended(self.host)
        modes: dict[Mode, ModeResult] = {}
        for index, mode in enumerate(self.order):
            iters, series = self.log.samples(index)
            status, met = statuses.get(mode, ("ok", False))
            one = ModePass(
                iters_per_sample=iters,
                samples=series,
                target_met=met,
                lifecycle=lifecycle if mode == "graph" else None,
                host=host,
            )
            modes[mode] = ModeResult(mode=mode, status=status, passes=[one])
        if "graph" not in modes:
            modes["graph"] = ModeResult(mode="graph", status="not_capturable", reason=graph_failure)
        if check.match is False and "graph" in self.order:
            modes["graph"] = modes["graph"].model_copy(update={"status": "failed", "reason": check.detail})
        return CaseResult(
            **case_identity(self.case),
            modes=modes,
            outputs_match=check.match,
            check_detail=check.detail,
            harness_s_per_iter=self.harness,
            elapsed_s=self.clock.wall() - self.start,
            error=check.detail if check.match is False else None,
            error_kind="mismatch" if check.match is False else None,
        )

    def close(self) -> None:
        self.prepared.close()


def start_rank(
    backend: Backend,
    case: Case,
    clock: Clock,
    ranks: RankInfo,
    progress: Callable[[float], None] | None = None,
) -> RankPass | CaseResult:
    """Prepare this rank's part of the case (rank 0 also calibrates its sampling); a CaseResult
    instead when it cannot run."""
    start = clock.wall()
    host = host_data(backend.pci_address)
    try:
        prepared = backend.prepare(case, ranks)
    except CaseRefused as err:
        return failed_case(case, f"rank {ranks.rank}: {err}", "skipped", clock.wall() - start, "resources")
    except LaunchbenchError as err:
        return failed_case(case, f"rank {ranks.rank}: {err}", elapsed=clock.wall() - start, kind="input")
    try:
        rank_pass = RankPass(case, clock, prepared, start, host)
        if ranks.rank == 0:
            rank_pass.lead(Sampler(case.measure, clock, backend.monitor), progress or (lambda _f: None))
        return rank_pass
    except BaseException:
        prepared.close()
        raise


def execute_rank(
    backend: Backend,
    case: Case,
    clock: Clock,
    ranks: RankInfo,
    progress: Callable[[float], None] | None = None,
) -> CaseResult:
    """This rank's part of a case on several GPUs: its own samples (a pass per mode), its graph life
    cycle and its output check."""
    started = start_rank(backend, case, clock, ranks, progress)
    return started if isinstance(started, CaseResult) else run_through(started)


def ranked(rank: int, text: str | None) -> str:
    """``text`` said by rank ``rank`` (as it is where it names its rank already)."""
    text = text or "failed"
    return text if text.startswith("rank ") else f"rank {rank}: {text}"


def _joined(values: Sequence[str | None]) -> str | None:
    """One text for the ranks: the common one, or each rank's."""
    known = [v for v in values if v]
    if not known:
        return None
    if len(set(known)) == 1 and len(known) == len(values):
        return known[0]
    return "; ".join(f"rank {r}: {v}" for r, v in enumerate(values) if v)


def merge_ranks(case: Case, results: Sequence[CaseResult], devices: Sequence[int]) -> CaseResult:
    """One result from every rank's: rank 0's statuses and life cycle, the whole step's series (per
    sample, the slowest rank) beside each rank's own, outputs matching only where every rank's did."""
    failed = [(rank, r) for rank, r in enumerate(results) if r.error]
    if failed:
        rank, first = failed[0]
        return first.model_copy(update={"error": ranked(rank, first.error)})
    leader = results[0]
    modes: dict[Mode, ModeResult] = {}
    for mode, lead in leader.modes.items():
        if lead.status not in MEASURED_STATUSES and lead.status != "failed":
            reasons = _joined([r.modes[mode].reason if mode in r.modes else None for r in results])
            modes[mode] = lead.model_copy(update={"reason": reasons})
            continue
        passes = [r.modes[mode].passes[0] for r in results]
        sizes = {key: {len(p.samples.get(key, [])) for p in passes} for key in SAMPLE_KEYS}
        if any(len(lengths) > 1 for lengths in sizes.values()):
            raise LaunchbenchError(
                f"the ranks of case {case.case_id} logged different numbers of samples ({sizes})"
            )
        whole = {
            key: [max(values) for values in zip(*(p.samples[key] for p in passes))]
            for key in SAMPLE_KEYS
            if all(p.samples.get(key) for p in passes)
        }
        ranks = [
            RankSamples(rank=rank, device=device, samples=p.samples)
            for rank, (p, device) in enumerate(zip(passes, devices, strict=True))
        ]
        one = lead.passes[0].model_copy(update={"samples": whole, "ranks": ranks})
        modes[mode] = lead.model_copy(update={"passes": [one]})
    matches = [r.outputs_match for r in results]
    match = False if False in matches else (True if all(m is True for m in matches) else None)
    return leader.model_copy(
        update={
            "modes": modes,
            "outputs_match": match,
            "check_detail": _joined([r.check_detail for r in results]),
            "elapsed_s": max(r.elapsed_s for r in results),
        }
    )


# --- the parent's side ------------------------------------------------------------------------------------


class RankGroup:
    """Runs one case-pass on ``case.devices`` GPUs (devices ``first_device`` onwards), a fresh worker
    process per rank (``spawn(device)``), stopped when the case ends."""

    def __init__(self, spawn: Callable[[int], Any], first_device: int):
        self._spawn = spawn
        self._first = first_device

    def execute(self, case: Case, progress: Callable[[float], None], timeout: float) -> CaseResult:
        devices = [self._first + rank for rank in range(case.devices)]
        workers: list[Any] = []
        try:
            for device in devices:
                workers.append(self._spawn(device))
            for worker in workers:
                worker.start()
            return self._run(case, workers, devices, progress, timeout)
        except LaunchbenchError as err:
            return failed_case(case, f"starting the ranks' workers: {err}")
        finally:
            for worker in workers:
                worker.stop()

    def _run(
        self,
        case: Case,
        workers: list[Any],
        devices: list[int],
        progress: Callable[[float], None],
        timeout: float,
    ) -> CaseResult:
        world = len(workers)
        deadline = time.monotonic() + timeout
        workers[0].conn.send(RankTask(case, 0, world))
        results: list[CaseResult | None] = [None] * world
        started = False
        while any(r is None for r in results):
            if time.monotonic() > deadline:
                return failed_case(
                    case, f"the case did not finish on its {world} GPUs within {timeout:.0f} s"
                )
            for rank, worker in enumerate(workers):
                if results[rank] is not None:
                    continue
                answer = _answer(case, rank, worker)
                if isinstance(answer, CaseResult):
                    return answer  # a rank's worker died
                if isinstance(answer, NcclId) and rank == 0 and not started:
                    for other in range(1, world):
                        workers[other].conn.send(RankTask(case, other, world, answer.unique_id))
                    started = True
                elif isinstance(answer, ProgressReport) and rank == 0:
                    progress(answer.fraction)
                elif isinstance(answer, Result):
                    if answer.result.error:  # the other ranks may wait for it forever: they are stopped
                        return answer.result.model_copy(update={"error": ranked(rank, answer.result.error)})
                    results[rank] = answer.result
        return merge_ranks(case, [r for r in results if r is not None], devices)


def _answer(case: Case, rank: int, worker: Any) -> Answer | ProgressReport | CaseResult | None:
    """What rank ``rank``'s worker sent (None when it sent nothing within a moment), or a failed
    result when it died."""
    if not worker.conn.poll(0.02):
        if not worker.alive():
            return failed_case(case, f"rank {rank}'s worker died (exit code {worker.process.exitcode})")
        return None
    try:
        answer: Answer | ProgressReport = worker.conn.recv()
    except (EOFError, ConnectionError):
        return failed_case(case, f"rank {rank}'s worker died while running this case")
    return answer
