"""The floor report: each launch-path layer's cost per launch, what it adds above the C driver floor and
above its parent on the real call path (µs and % of its own cost), what a graph saves at that layer, and
the host facts that move these numbers. Built from a floor run's results.json alone (no GPU).

The call path is a tree, not a column: cuda-bindings, CuPy's RawKernel and torch each reach the driver
their own way (siblings over the C floor; CuPy does not call through cuda-bindings), and CuPy's
ElementwiseKernel and ufunc launch through RawKernel's path."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from launchbench.report.floor_paired import MIN_ROUNDS, Paired, measured_mode, paired
from launchbench.results.schema import CPU, GPU, WALL, CaseResult, RunRecord, ThreadPlace
from launchbench.scenario.floor import LAYERS, Layer

US = 1e6
NOT_EXPOSED = "not exposed by this host"  # what sysfs does not say (no cpufreq, a GPU's numa_node of -1)
# each layer's parent on the real call path (its cost above the parent is what it adds); None: the root
PARENT: dict[Layer, Layer | None] = {
    "c": None,
    "bindings": "c",
    "cupy_raw": "c",
    "cupy_raw_stream": "cupy_raw",
    "cupy_elementwise": "cupy_raw",
    "cupy_ufunc": "cupy_raw",
    "torch": "c",
    "gpu": None,
}
LABELS: dict[Layer, str] = {
    "c": "C cuLaunchKernel / cuGraphLaunch",
    "bindings": "cuda-bindings from Python",
    "cupy_raw": "CuPy RawKernel",
    "cupy_raw_stream": "CuPy RawKernel, stream=",
    "cupy_elementwise": "CuPy ElementwiseKernel",
    "cupy_ufunc": "CuPy ufunc (multiply)",
    "torch": "torch Tensor.mul_",
    "gpu": "GPU per-node floor (graph replay)",
}


@dataclass(frozen=True)
class FloorRow:
    """One layer at one argument count (seconds per launch; None where not measured)."""

    layer: Layer
    args: int | None
    eager_s: float | None
    eager_cpu_s: float | None
    graph_s: float | None
    graph_cpu_s: float | None
    gpu_node_s: float | None  # the gpu layer's GPU time per node
    below: Layer | None  # the measured ancestor on the call path its ``above_s`` is taken over
    above_s: float | None
    skipped: str | None  # why the layer (or its eager mode) was not measured
    above_floor_s: float | None = None  # its eager cost above the C floor (None: no C floor measured)
    # 95% CIs of above_s, above_floor_s and saves_s where those are paired round by round (floor_paired)
    above_ci_s: tuple[float, float] | None = None
    above_floor_ci_s: tuple[float, float] | None = None
    # what a graph saves per launch at this layer (eager wall minus graph wall): paired round by round
    # where the two modes share rounds, else the difference of their medians
    saves_s: float | None = None
    saves_ci_s: tuple[float, float] | None = None

    @property
    def above_pct(self) -> float | None:
        if self.above_s is None or not self.eager_s:
            return None
        return 100.0 * self.above_s / self.eager_s


@dataclass(frozen=True)
class HostFacts:
    cpu_model: str | None
    places: tuple[tuple[str, ThreadPlace], ...]  # each layer and where its launching thread ran (first pass)
    gpu_node: int | None
    kernel: str | None
    driver: str | None
    gpu: str | None


def smt(place: ThreadPlace) -> str | None:
    """'on' where the launching CPU shares its core with another, 'off' where not (None: unknown)."""
    if place.siblings is None:
        return None
    return "on" if any(sep in place.siblings for sep in ",-") else "off"


@dataclass(frozen=True)
class FloorReport:
    rows: list[FloorRow]
    host: HostFacts


def _median(case: CaseResult, mode: str, key: str) -> float | None:
    result = measured_mode(case, mode)
    if result is None:
        return None
    values = result.samples.get(key, [])
    return statistics.median(values) / case.launches_per_iter if values else None


def _reason(case: CaseResult) -> str | None:
    """Why the layer was not measured: the reason of its skipped modes, where none was measured."""
    if any(_median(case, mode, WALL) is not None for mode in case.modes):
        return None
    reasons = [m.reason for m in case.modes.values() if m.status == "skipped" and m.reason]
    return reasons[0] if reasons else "not measured"


def _layer(case: CaseResult) -> Layer | None:
    layer = case.params.get("layer", case.chain)
    return next((known for known in LAYERS if known == layer), None)


def ancestors(layer: Layer) -> list[Layer]:
    """The layers under ``layer`` on its call path, nearest first (the C floor last)."""
    path: list[Layer] = []
    parent = PARENT[layer]
    while parent is not None:
        path.append(parent)
        parent = PARENT[parent]
    return path


Eager = dict[tuple[Layer, int | None], tuple[float, CaseResult]]  # a layer's eager median and its case


def _at(eager: Eager, layer: Layer, args: int | None) -> tuple[float, CaseResult] | None:
    """``layer``'s eager cost at ``args``, or for a layer without the axis at its lowest count measured."""
    same = eager.get((layer, args))
    if same is not None or args is not None:
        return same
    counts = sorted(a for (name, a) in eager if name == layer and a is not None)
    return eager[(layer, counts[0])] if counts else None


def _below(
    layer: Layer, args: int | None, eager: Eager
) -> tuple[Layer | None, tuple[float, CaseResult] | None]:
    """The nearest measured ancestor of ``layer`` on its call path and its eager cost: at the same
    argument count, or for a layer without the axis at the lowest one measured."""
    for parent in ancestors(layer):
        found = _at(eager, parent, args)
        if found is not None:
            return parent, found
    return None, None


@dataclass(frozen=True)
class _Step:
    """What a case's eager cost is above another's: paired round by round where it could be."""

    value: float | None
    ci: tuple[float, float] | None


def _step(found: Paired | None, own: float | None, base: float | None) -> _Step:
    """``own`` above ``base``: paired round by round where ``found``, else the difference of medians."""
    if found is not None:
        return _Step(found.median_s, found.ci_s)
    return _Step(None if own is None or base is None else own - base, None)


def _eager_step(case: CaseResult, own: float | None, base: tuple[float, CaseResult] | None) -> _Step:
    """``case``'s eager cost above ``base``'s (its eager median and its case)."""
    if base is None:
        return _Step(None, None)
    return _step(paired(case, "eager", base[1], "eager"), own, base[0])


def _row(layer: Layer, case: CaseResult, eager: Eager) -> FloorRow:
    args = case.params.get("args")
    own = _median(case, "eager", WALL)
    below, base = _below(layer, args, eager)
    above = _eager_step(case, own, base) if base is not None else _Step(own, None)
    floor = _eager_step(case, own, _at(eager, "c", args)) if layer not in ("c", "gpu") else _Step(None, None)
    graph = _median(case, "graph", WALL)
    saves = _step(paired(case, "eager", case, "graph"), own, graph)
    return FloorRow(
        layer=layer,
        args=args,
        eager_s=own,
        eager_cpu_s=_median(case, "eager", CPU),
        graph_s=graph,
        graph_cpu_s=_median(case, "graph", CPU),
        gpu_node_s=_median(case, "graph", GPU) if layer == "gpu" else None,
        below=below,
        above_s=above.value,
        skipped=_reason(case),
        above_floor_s=floor.value,
        above_ci_s=above.ci,
        above_floor_ci_s=floor.ci,
        saves_s=saves.value,
        saves_ci_s=saves.ci,
    )


def floor_rows(record: RunRecord) -> list[FloorRow]:
    """The run's floor cases as rows, in stacking order then argument count."""
    cases = [(layer, case) for case in record.cases if case.kinds == "floor" and (layer := _layer(case))]
    eager: Eager = {}
    for layer, case in cases:
        value = _median(case, "eager", WALL)
        if value is not None:
            eager[(layer, case.params.get("args"))] = (value, case)
    rows = [_row(layer, case, eager) for layer, case in cases]
    return sorted(rows, key=lambda r: (LAYERS.index(r.layer), -1 if r.args is None else r.args))


def host_facts(record: RunRecord) -> HostFacts:
    env = record.environment
    passes = [p for case in record.cases for mode in case.modes.values() for p in mode.passes]
    places: dict[str, ThreadPlace] = {}
    for case in record.cases:  # each layer's process, where its first pass says
        host = case.first_host
        if host is not None and host.start is not None:
            places.setdefault(case.chain, host.start)
    gpu_node = next((p.host.gpu_node for p in passes if p.host.gpu_node is not None), None)
    return HostFacts(
        cpu_model=env.host.cpu,
        places=tuple(places.items()),
        gpu_node=gpu_node,
        kernel=env.host.kernel,
        driver=env.driver or env.cuda_driver,
        gpu=env.gpu.name,
    )


def floor_report(record: RunRecord) -> FloorReport:
    return FloorReport(floor_rows(record), host_facts(record))


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value * US:.2f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def _args(row: FloorRow) -> str:
    return "—" if row.args is None else str(row.args)


HEADER = (
    "| layer | args | eager µs/launch | above the C floor µs | above its parent µs | % | parent | graph µs/launch | graph saves µs | eager CPU µs |",
    "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
)


def _with_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    """µs, with its 95% CI where it was paired round by round."""
    return _us(value) if ci is None else f"{_us(value)} ({_us(ci[0])} to {_us(ci[1])})"


PAIRED_NOTE = (
    "In brackets, a step's 95% CI: the two modes were sampled in the same rounds of one process (a layer's "
    "eager and graph modes always; two layers under processes: shared), and the step is the median over "
    "rounds of the difference of their round medians, so a change of the host's speed between rounds "
    "cancels out of it. A step without one is the difference of the two medians: layers sampled in "
    f"different processes (each layer's own by default) or with fewer than {MIN_ROUNDS} rounds in common; "
    "a change of the host's speed between those processes is in it."
)


def _above(row: FloorRow) -> str:
    """What the row adds above its parent; a negative value says the layer reads below its parent."""
    text = _with_ci(row.above_s, row.above_ci_s)
    return f"{text} (below its parent)" if row.above_s is not None and row.above_s < 0 else text


def _row_line(row: FloorRow) -> str:
    if row.skipped is not None:
        return f"| {row.layer} | {_args(row)} | skipped: {row.skipped} | | | | | | | |"
    graph = _us(row.gpu_node_s) + " (GPU/node)" if row.layer == "gpu" else _us(row.graph_s)
    cells = (
        row.layer, _args(row), _us(row.eager_s), _with_ci(row.above_floor_s, row.above_floor_ci_s), _above(row),
        _pct(row.above_pct), row.below or "—", graph, _with_ci(row.saves_s, row.saves_ci_s), _us(row.eager_cpu_s),
    )  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def call_path_lines() -> list[str]:
    """The tree the table stacks on, and what siblings mean."""
    branches = []
    for child in (layer for layer in LAYERS if PARENT[layer] == "c"):  # the tree is two deep
        grandchildren = [layer for layer in LAYERS if PARENT[layer] == child]
        branches.append(f"c → {child}" + (f" → {', '.join(grandchildren)}" if grandchildren else ""))
    over_c = [layer for layer in LAYERS if PARENT[layer] == "c"]
    return [
        "Call path: " + " · ".join(branches) + ".",
        f"{', '.join(over_c[:-1])} and {over_c[-1]} are siblings over the C floor: each reaches the driver "
        "its own way (CuPy does not call through cuda-bindings), so each is stacked on the C floor and "
        "what one costs above another is no layer of either.",
    ]


def _place_text(place: ThreadPlace) -> str:
    mhz = f"{place.mhz:.0f} MHz" if place.mhz else f"MHz {NOT_EXPOSED}"
    siblings = f": siblings {place.siblings}" if place.siblings else ""
    return (
        f"CPU {_known(place.cpu)} ({mhz}, governor {place.governor or NOT_EXPOSED}, NUMA node "
        f"{_known(place.node)}, SMT {smt(place) or 'unknown'}{siblings})"
    )


def _threads_text(host: HostFacts) -> str:
    """Where the launching thread ran; where the layers' processes ran on different CPUs, each group of
    layers with its CPU."""
    by_place: dict[str, list[str]] = {}
    for layer, place in host.places:
        by_place.setdefault(_place_text(place), []).append(layer)
    if len(by_place) <= 1:
        return f"the launching thread on {next(iter(by_place), _place_text(ThreadPlace()))}"
    groups = [f"{_and(layers)} on {where}" for where, layers in by_place.items()]
    return "the launching threads by layer (the layers' processes ran on different CPUs): " + "; ".join(
        groups
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def host_lines(host: HostFacts) -> list[str]:
    return [
        f"- GPU: {host.gpu or 'unknown'}, driver {host.driver or 'unknown'}, NUMA node {_known(host.gpu_node)}",
        f"- CPU: {host.cpu_model or 'unknown'}; {_threads_text(host)}",
        f"- kernel: {host.kernel or 'unknown'}",
    ]


def _known(value: object) -> str:
    return NOT_EXPOSED if value is None else str(value)


def render_markdown(report: FloorReport) -> str:
    """The report as Markdown: the table, then the host facts."""
    lines = [
        "# Where a launch's time goes",
        "",
        *HEADER,
        *(_row_line(r) for r in report.rows),
        "",
        PAIRED_NOTE,
        "",
    ]
    lines += [*call_path_lines(), ""]
    lines += ["Host:", *host_lines(report.host), ""]
    return "\n".join(lines)
