"""Synthetic RunRecords shaped like a real quickstart run, for CPU tests of everything downstream of
measurement. Real H200 result files live under tests/data/h200/ and are preferred where a test can use them.

``make_run(passes=3)`` measures every case in passes like launchbench does, and imitates the host of
the real H200 runs: a VM that switches between speed states on a 10–60 s timescale. CPU-bound series
(every eager series; graph CPU time and the launch part of graph latency) are multiplied by a host
speed factor per pass (``eager_drift``, default ×1.0, ×1.0, ×1.35), while the GPU-bound graph wall and
GPU times stay within ±0.2% between passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from launchbench import __version__
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    WALL,
    CaseResult,
    Clocks,
    GraphLifecycle,
    ModeResult,
    RunRecord,
    ScenarioInfo,
)

LENGTHS = (1, 10, 100, 1000)
DEFAULT_EAGER_DRIFT: tuple[float, ...] = (1.0, 1.0, 1.35)
GRAPH_DRIFT = 0.002  # graph (GPU-bound) pass medians differ by at most ±0.2%


# two cases of empty kernels for the ab tests, measured in two passes a side
TINY_AB_SCENARIO = """
name: tiny
description: two cases for ab
sweep:
  length: [1, 10]
chains:
  empty:
    - kind: empty
      repeat: $length
measure: {max_time: 0.2, passes: 2, min_samples: 5, warmup_time: 0.01}
"""


def _series(rng: np.random.Generator, center: float, noise: float, n: int) -> list[float]:
    return list(center * (1 + noise * rng.standard_normal(n)).clip(0.5, None))


def pass_split(n: int, passes: int) -> list[int]:
    """n samples shared out among passes as evenly as possible (earlier passes get the remainder)."""
    return [n // passes + (1 if i < n % passes else 0) for i in range(passes)]


def _passes(
    rng: np.random.Generator,
    sizes: Sequence[int],
    centers: dict[str, tuple[float, float]],
    factors: dict[str, Sequence[float]],
) -> dict[str, list[float]]:
    """Each series' samples pass after pass: (center, noise) scaled by that series' factor of the pass."""
    out: dict[str, list[float]] = {key: [] for key in centers}
    for index, size in enumerate(sizes):
        for key, (center, noise) in centers.items():
            out[key] += _series(rng, center * factors[key][index], noise, size)
    return out


def make_case(
    chain: str,
    length: int,
    rng: np.random.Generator,
    n: int = 30,
    passes: int = 1,
    eager_drift: Sequence[float] | None = None,
) -> CaseResult:
    """One quickstart case. ``n`` samples per series in all, shared among ``passes``; pass i runs on a
    host of speed factor eager_drift[i % len(eager_drift)] (CPU-bound series only)."""
    eager_launch = 6.5e-6 if chain == "empty" else 14e-6
    graph_launch = 0.5e-6 if chain == "empty" else 2.2e-6
    eager_iter = eager_launch * length
    graph_iter = graph_launch * length + 1.6e-6
    sizes = pass_split(n, passes)
    drift = tuple(eager_drift) if eager_drift else DEFAULT_EAGER_DRIFT
    host = [drift[i % len(drift)] if passes > 1 else 1.0 for i in range(passes)]
    gpu = [1 + GRAPH_DRIFT * (2 * i / (passes - 1) - 1) if passes > 1 else 1.0 for i in range(passes)]
    eager_samples = _passes(
        rng,
        sizes,
        {
            WALL: (eager_iter, 0.03),
            CPU: (eager_iter * 0.99, 0.03),
            GPU: (eager_iter, 0.03),
            LATENCY: (eager_iter + 8e-6, 0.05),
        },
        {key: host for key in (WALL, CPU, GPU, LATENCY)},
    )
    graph_samples = _passes(
        rng,
        sizes,
        {
            WALL: (graph_iter, 0.004),
            CPU: (1.7e-6 + 3e-9 * length, 0.02),
            GPU: (graph_iter, 0.004),
            LATENCY: (graph_iter + 9e-6, 0.05),
        },
        {
            WALL: gpu,
            GPU: gpu,
            CPU: host,
            LATENCY: [
                (graph_iter * g + 9e-6 * h) / (graph_iter + 9e-6) for g, h in zip(gpu, host, strict=True)
            ]
            if passes > 1
            else [1.0],
        },
    )
    pass_sizes = sizes if passes > 1 else []
    eager = ModeResult.pooled(
        mode="eager",
        status="ok",
        iters_per_sample=max(1, int(2e-3 / eager_iter)),
        samples=eager_samples,
        target_met=True,
        pass_sizes=pass_sizes,
    )
    graph = ModeResult.pooled(
        mode="graph",
        status="ok",
        iters_per_sample=max(1, int(2e-3 / graph_iter)),
        samples=graph_samples,
        target_met=True,
        pass_sizes=pass_sizes,
        lifecycle=GraphLifecycle(
            split=True,
            capture_s=3e-6 * length + 20e-6,
            instantiate_s=4.5e-6 * length + 30e-6,
            upload_s=1.3e-6 * length + 10e-6,
            first_launch_s=graph_iter + 15e-6,
            nodes=length,
            mem_bytes=0,
        ),
    )
    return CaseResult(
        scenario="quickstart",
        case_id=f"{chain}/length={length}",
        chain=chain,
        kinds=chain,
        params={"length": length},
        launches_per_iter=length,
        modes={"eager": eager, "graph": graph},
        outputs_match=True,
        clocks=Clocks(sm_mhz=1980, mem_mhz=3201, throttle_reasons=[]),
        harness_s_per_iter=6e-8,
        elapsed_s=3.0,
        passes_done=passes,
    )


def make_run(
    gpu_name: str = "NVIDIA H200",
    seed: int = 0,
    n: int = 30,
    passes: int = 1,
    eager_drift: Sequence[float] | None = None,
) -> RunRecord:
    """A synthetic quickstart run: 2 chains × 4 lengths × (eager, graph). With ``passes`` > 1 the
    samples (n per series in all) come from that many passes, CPU-bound series drifting between them
    by ``eager_drift`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    cases = [
        make_case(chain, length, rng, n, passes, eager_drift)
        for chain in ("empty", "scale")
        for length in LENGTHS
    ]
    return RunRecord(
        launchbench_version=__version__,
        status="complete",
        started="2026-11-29T19:00:00+00:00",
        finished="2026-11-29T19:01:00+00:00",
        environment={
            "gpu": {"name": gpu_name, "uuid": "GPU-synthetic", "index": 0},
            "driver": "580.159.04",
            "cuda_runtime": "13.2",
            "cupy": "14.2.0",
        },
        scenarios=[
            ScenarioInfo(
                name="quickstart", description="synthetic", file="scenarios/quickstart.yaml", sha256="0" * 64
            )
        ],
        cases=cases,
    )


def first_graph_row(run: RunRecord) -> tuple[str, str, float]:
    """(scenario, case, median wall µs per launch) of the run's first measured graph row."""
    from launchbench.analysis.table import run_table

    table = run_table(run)
    row = table[(table["mode"] == "graph") & table["wall_us_per_launch"].notna()].iloc[0]
    return row["scenario"], row["case"], float(row["wall_us_per_launch"])


def expectation_scenario(path: Path, name: str, expect: str) -> Path:
    """A scenario file named ``name`` whose ``expect:`` block is ``expect`` (YAML lines), with a chain of
    empty kernels for each case the block names (``case: 'chain/axis=value'``: the chain and that axis
    value), so that every case pattern in it matches a case of the file."""
    chains: dict[str, dict[str, str]] = {"empty": {}}
    for case in re.findall(r"case: '([^'*?\[]+)'", expect):
        chain, _, suffix = case.partition("/")
        chains[chain] = dict(part.split("=", 1) for part in suffix.split(",") if "=" in part)
    sweep = {axis: value for axes in chains.values() for axis, value in axes.items()}
    lines = [f"name: {name}", "description: test"]
    if sweep:
        lines += ["sweep:"] + [f"  {axis}: [{value}]" for axis, value in sweep.items()]
    lines.append("chains:")
    for chain, axes in chains.items():
        uses = "".join(f", grid: ${axis}" if i == 0 else f", block: ${axis}" for i, axis in enumerate(axes))
        lines += [f"  {chain}:", f"    - {{kind: empty{uses}}}"]
    path.write_text("\n".join(lines) + f"\nexpect:\n{expect}", encoding="utf-8")
    return path


def plant_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``launchbench`` under ``tmp_path`` holding ``files`` (path → source; an empty
    ``__init__.py`` in every folder, an empty ``errors.py``), for the tests that read a tree's sources."""
    root = tmp_path / "launchbench"
    for name, source in {"__init__.py": "", "errors.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            (root / parent / "__init__.py").touch()
        path.write_text(source)
    return root
