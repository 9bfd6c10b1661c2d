"""Synthetic RunRecords shaped like a real quickstart run, for CPU tests of everything downstream of
measurement. Real H200 result files live under tests/data/h200/ and are preferred where a test can use them."""

from __future__ import annotations

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


def _series(rng: np.random.Generator, center: float, noise: float, n: int) -> list[float]:
    return list(center * (1 + noise * rng.standard_normal(n)).clip(0.5, None))


def make_case(chain: str, length: int, rng: np.random.Generator, n: int = 30) -> CaseResult:
    eager_launch = 6.5e-6 if chain == "empty" else 14e-6
    graph_launch = 0.5e-6 if chain == "empty" else 2.2e-6
    eager_iter = eager_launch * length
    graph_iter = graph_launch * length + 1.6e-6
    eager = ModeResult(
        mode="eager",
        status="ok",
        iters_per_sample=max(1, int(2e-3 / eager_iter)),
        samples={
            WALL: _series(rng, eager_iter, 0.03, n),
            CPU: _series(rng, eager_iter * 0.99, 0.03, n),
            GPU: _series(rng, eager_iter, 0.03, n),
            LATENCY: _series(rng, eager_iter + 8e-6, 0.05, n),
        },
        target_met=True,
    )
    graph = ModeResult(
        mode="graph",
        status="ok",
        iters_per_sample=max(1, int(2e-3 / graph_iter)),
        samples={
            WALL: _series(rng, graph_iter, 0.004, n),
            CPU: _series(rng, 1.7e-6 + 3e-9 * length, 0.02, n),
            GPU: _series(rng, graph_iter, 0.004, n),
            LATENCY: _series(rng, graph_iter + 9e-6, 0.05, n),
        },
        target_met=True,
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
    )


def make_run(gpu_name: str = "NVIDIA H200", seed: int = 0, n: int = 30) -> RunRecord:
    rng = np.random.default_rng(seed)
    cases = [make_case(chain, length, rng, n) for chain in ("empty", "scale") for length in LENGTHS]
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
        scenarios=[ScenarioInfo(name="quickstart", description="synthetic", file="scenarios/quickstart.yaml", sha256="0" * 64)],
        cases=cases,
    )
