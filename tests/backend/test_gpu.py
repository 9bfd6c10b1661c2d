"""GPU tests: run on a machine with CuPy and a CUDA device (`pytest -m gpu`); skipped elsewhere."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import SystemClock
from launchbench.results.store import load_run
from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
DATA = Path(__file__).parents[1] / "data" / "gpu"
ROOT = Path(__file__).parents[2]


def _cases(name: str):
    return {c.chain: c for c in expand_scenario(DATA / name)}


@pytest.mark.parametrize(
    "chain",
    [
        "empty",
        "scale_f16",
        "scale_f32",
        "scale_f64",
        "add_f32",
        "fma_f64",
        "fma_f16",
        "reduction",
        "copy",
        "memset",
        "raw",
        "mixed",
    ],
)
def test_graph_output_equals_eager_for_every_step_kind(backend, chain):
    from launchbench.run.execute import execute_case

    case = _cases("every_kind.yaml")[chain]
    result = execute_case(backend, case, backend.clock)
    assert result.error is None, result.error
    assert result.outputs_match is True, result.check_detail
    graph = result.modes["graph"]
    assert graph.status in ("ok", "budget")
    assert graph.lifecycle is not None and graph.lifecycle.nodes is not None
    if chain != "reduction" and chain != "mixed":
        assert graph.lifecycle.nodes == case.launches_per_iter
    for mode in ("eager", "graph"):
        assert len(result.modes[mode].samples["wall_s_per_iter"]) >= 5
        assert min(result.modes[mode].samples["gpu_s_per_iter"]) > 0


def test_every_case_runs_on_the_backends_own_streams(backend):
    """One main stream for every case (a new stream per case made results depend on the case's place in
    the run), and auxiliary stream N the same object in every case that uses it."""
    cases = _cases("every_kind.yaml")
    first, second = backend.prepare(cases["empty"]), backend.prepare(cases["copy"])
    try:
        assert first.stream is second.stream is backend.stream(0)
    finally:
        first.close()
        second.close()
    assert backend.stream(2) is backend.stream(2) and backend.stream(2) is not backend.stream(0)


def test_check_catches_a_graph_that_computes_something_else(backend):
    """Corrupt the captured graph's input after capture: the graph reads a buffer eager never sees."""
    import cupy

    from launchbench.backend.chain import reset_steps, snapshot_steps
    from launchbench.backend.check import compare_outputs

    case = _cases("every_kind.yaml")["scale_f32"]
    prepared = backend.prepare(case)
    try:
        reset_steps(prepared.stream, prepared.steps)
        initial = snapshot_steps(prepared.stream, prepared.steps)
        prepared.eager.run_batch(1)
        eager = snapshot_steps(prepared.stream, prepared.steps)
        reset_steps(prepared.stream, prepared.steps)
        prepared.steps[0].outputs["step0.scale.x"] += cupy.float32(1.0)  # what a stale address would do
        prepared.workloads["graph"].run_batch(1)
        graph = snapshot_steps(prepared.stream, prepared.steps)
    finally:
        prepared.close()
    check = compare_outputs(initial, eager, graph)
    assert check.match is False and "differ" in check.detail


def test_capture_refusal_is_a_reason_not_a_crash(backend):
    import cupy

    from launchbench.backend.graph import CaptureFailed, capture

    a = cupy.ones((64, 64), dtype=cupy.float32)
    out = cupy.empty_like(a)
    stream = cupy.cuda.Stream(non_blocking=True)
    with pytest.raises(CaptureFailed, match="cuBLAS|NotImplemented"):
        capture(stream, [lambda: cupy.matmul(a, a, out=out)], SystemClock())
    with stream:  # the stream is usable afterwards
        out.fill(1)
    stream.synchronize()


def test_lifecycle_is_split_with_cuda_bindings(backend):
    pytest.importorskip("cuda.bindings")
    from launchbench.run.execute import execute_case

    case = _cases("every_kind.yaml")["empty"]
    life = execute_case(backend, case, backend.clock).modes["graph"].lifecycle
    assert life.split and life.instantiate_s > 0 and life.capture_s > 0 and life.upload_s > 0


def test_every_pass_records_where_its_launching_thread_ran(backend):
    """The GPU's PCI bus id names a sysfs device directory, and each pass records the launching
    thread's CPU at its start and end (its NUMA node and the GPU's where the host has them)."""
    from launchbench.results.thread_place import sysfs_pci_address
    from launchbench.run.execute import execute_case

    assert backend.pci_address is not None and sysfs_pci_address(backend.pci_address) is not None
    assert Path("/sys/bus/pci/devices", sysfs_pci_address(backend.pci_address)).is_dir()
    result = execute_case(backend, _cases("every_kind.yaml")["empty"], backend.clock)
    for mode in result.modes.values():
        host = mode.passes[0].host
        assert host.start is not None and host.start.cpu is not None
        assert host.end is not None and host.end.cpu is not None


def test_ten_thousand_eager_launches_keep_the_queue_bounded(backend):
    """A 10,000-launch chain of a slow kernel measures (bounded queue), and the CPU time per launch stays
    a launch cost instead of becoming GPU time."""
    import cupy

    from launchbench.backend.step_builder import StepBuilder
    from launchbench.backend.workload import LaunchLoop
    from launchbench.kinds.raw import RawStep

    stream = cupy.cuda.Stream(non_blocking=True)
    step = RawStep.model_validate(
        {
            "kind": "raw",
            "source": 'extern "C" __global__ void spin(long long n) { long long t = clock64(); while (clock64() - t < n) {} }',
            "function": "spin",
            "grid": 1,
            "block": 1,
            "args": [{"scalar": 100_000, "dtype": "int64"}],
            "repeat": 10_000,
        }
    )
    built = StepBuilder(stream).build(step, 0)
    loop = LaunchLoop(built.calls, 10_000, stream, SystemClock(), max_in_flight=512)
    loop.run_batch(1)
    timing = loop.run_batch(1)
    per_launch_gpu = timing.gpu_s / 10_000
    per_launch_cpu = timing.cpu_s / 10_000
    assert per_launch_gpu > 30e-6  # the kernel spins ~50 µs: GPU-bound, 10,000 launches queue far past 1000
    assert per_launch_cpu < 0.4 * per_launch_gpu  # waiting is not counted as launch CPU time
    assert timing.wall_s < 1.5 * timing.gpu_s


def test_latency_of_a_chain_within_one_window_block_records_no_window_event(backend):
    """The latency sample of a chain that fits one block of the launch window is the chain and the end
    event only (the window's mark would be one more event record inside the measured time); a chain
    longer than a block keeps its marks, which bound the queue."""
    from functools import partial

    import cupy

    from launchbench.backend.workload import LaunchLoop
    from launchbench.kinds.empty import EMPTY_SOURCE

    stream = backend.stream(0)
    call = partial(cupy.RawKernel(EMPTY_SOURCE, "launchbench_empty"), (1,), (1,), ())
    short = LaunchLoop([call] * 10, 10, stream, SystemClock(), max_in_flight=512)
    assert 0 < short.run_latency() < 0.1 and short.window._next == 0
    short.run_batch(1)
    assert short.window._next == 1  # throughput batches still mark
    long = LaunchLoop([call] * 300, 300, stream, SystemClock(), max_in_flight=512)  # blocks of 256 + 44
    assert 0 < long.run_latency() < 0.1 and long.window._next == 2


def test_nvml_finds_the_same_device_by_pci_bus_id_as_by_uuid():
    """The fallback for a UUID that CuPy cuts short at a zero byte: the PCI bus id names the same
    device, and the environment records NVML's driver, clocks and a whole UUID."""
    import cupy
    import pynvml

    from launchbench.backend.gpu_probe import collect_environment
    from launchbench.backend.nvml import nvml_handle

    pynvml.nvmlInit()
    raw = cupy.cuda.runtime.getDeviceProperties(0)["uuid"]
    bus_id = cupy.cuda.Device(0).pci_bus_id
    by_bus = nvml_handle(pynvml, raw[:10], bus_id)
    env = collect_environment(0)
    assert env["nvml"] and env["driver"] and env["clocks"]["sm_mhz"] > 0
    uuid = pynvml.nvmlDeviceGetUUID(by_bus)
    assert (uuid.decode() if isinstance(uuid, bytes) else uuid) == env["gpu"]["uuid"]


def test_quickstart_run_through_the_cli(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchbench",
            "run",
            str(ROOT / "scenarios" / "quickstart.yaml"),
            "--quick",
            "--out-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = load_run(out)
    assert run.status == "complete" and len(run.cases) == 8
    assert all(c.outputs_match for c in run.cases)
    assert "NVIDIA" in run.gpu_name


def test_a_faulting_case_fails_alone(tmp_path):
    out = tmp_path / "faults"
    proc = subprocess.run(
        [sys.executable, "-m", "launchbench", "run", str(DATA / "faults.yaml"), "--out-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    run = load_run(out)
    by_chain = {c.chain: c for c in run.cases}
    assert set(by_chain) == {"a_before", "b_out_of_bounds", "c_after"}
    assert by_chain["a_before"].error is None and by_chain["c_after"].error is None
    assert by_chain["c_after"].outputs_match is True
    assert by_chain["b_out_of_bounds"].error
    print("fault:", by_chain["b_out_of_bounds"].error)


def test_sigint_keeps_completed_cases_and_resume_completes(tmp_path):
    out = tmp_path / "interrupted"
    cmd = [
        sys.executable,
        "-m",
        "launchbench",
        "run",
        str(ROOT / "scenarios" / "quickstart.yaml"),
        "--quick",
        "--out-dir",
        str(out),
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if len(load_run(out).cases) >= 2:  # results.json and the journal of finished case-passes
                break
        except LaunchbenchError:
            pass
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    partial = load_run(out)
    assert partial.status == "interrupted" and 2 <= len(partial.cases) < 8
    print(f"interrupted after {len(partial.cases)} cases")
    done = subprocess.run(
        [sys.executable, "-m", "launchbench", "run", "--resume", str(out), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    final = load_run(out)
    assert final.status == "complete" and len(final.cases) == 8
    assert {c.case_id for c in partial.cases} <= {c.case_id for c in final.cases}


def test_graph_command_writes_dot(tmp_path):
    out = tmp_path / "g.dot"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchbench",
            "graph",
            str(DATA / "every_kind.yaml"),
            "--case",
            "mixed",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert text.startswith("digraph") and text.count(" [label=") >= 5  # a node per launch, at least


def test_a_raw_kernel_that_does_not_compile_shows_the_log_and_exits_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchbench",
            "run",
            str(DATA / "bad_kernel.yaml"),
            "--out-dir",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "bad_kernel.yaml" in proc.stderr
        and "undeclared_name" in proc.stderr
        and "Traceback" not in proc.stderr
    )
    run = load_run(tmp_path / "r")
    assert {c.chain: c.error is None for c in run.cases} == {"ok": True, "broken": False}
