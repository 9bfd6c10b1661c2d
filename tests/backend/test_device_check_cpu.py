"""device_check's judging on the CPU: the module run against a NumPy stand-in for the few CuPy calls it
makes (arrays of a subclass play the device's, plain NumPy arrays the host's pinned outputs), held to
check.compare_outputs' verdict and words for the same contents, every count by count_many's cumulative
sum. The GPU tests in test_shapes_gpu.py hold the real module to the same, and count_many's kernel to the
cumulative sum."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from launchbench.backend.check import compare_outputs
from launchbench.kinds.base import BuiltStep

MODULES = ("device_check", "count_many")  # imported again against the stand-in


class DeviceArray(np.ndarray):
    """An array the stand-in calls a device array (``cupy.ndarray``)."""


class _Stream:
    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def synchronize(self) -> None:
        return None


@pytest.fixture()
def device_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    stand_in = types.ModuleType("cupy")
    for name in ("concatenate", "cumsum", "zeros", "asarray", "isnan", "int64"):
        setattr(stand_in, name, getattr(np, name))
    stand_in.ndarray = DeviceArray  # type: ignore[attr-defined]
    stand_in.asnumpy = np.asarray  # type: ignore[attr-defined]
    stand_in.get_array_module = lambda _a: np  # type: ignore[attr-defined]
    stand_in.cuda = types.SimpleNamespace(Stream=_Stream)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    import launchbench.backend

    # the package's attributes and the module table get the real modules back afterwards (GPU sessions)
    for name in MODULES:
        monkeypatch.delitem(sys.modules, f"launchbench.backend.{name}", raising=False)
        monkeypatch.delattr(launchbench.backend, name, raising=False)
    module = importlib.import_module("launchbench.backend.device_check")
    # every dtype counted by the cumulative sum, which the stand-in runs; the kernel is tested on the GPU
    monkeypatch.setattr(sys.modules["launchbench.backend.count_many"], "C_TYPES", {})
    yield module
    for name in MODULES:
        sys.modules.pop(f"launchbench.backend.{name}", None)
        if hasattr(launchbench.backend, name):
            delattr(launchbench.backend, name)


def _contents() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(5)
    initial: dict[str, np.ndarray] = {
        "a": rng.random((4, 5)).astype(np.float32),
        "b": rng.integers(0, 9, 7).astype(np.int32),
        "c": rng.random(6),
        "keep": np.arange(3, dtype=np.float32),
        "pinned": np.arange(4, dtype=np.int64),
    }
    eager = {k: v.copy() for k, v in initial.items()}
    eager["a"] = eager["a"] * 2
    eager["b"] = eager["b"] + 1
    eager["c"][2] = np.nan
    eager["pinned"] = eager["pinned"] + 1
    return initial, eager


def _graphs(eager: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    graphs = {
        name: {k: v.copy() for k, v in eager.items()} for name in ("same", "rounding", "b", "nan", "pinned")
    }
    graphs["rounding"]["a"] = np.nextafter(eager["a"], np.float32(np.inf))
    graphs["b"]["b"][:3] += 5
    graphs["nan"]["c"][2] = 0.0
    graphs["pinned"]["pinned"][1] = 0
    return graphs


def test_the_judge_gives_the_host_checks_verdict_and_words(device_check: types.ModuleType) -> None:
    initial, eager = _contents()
    buffers = {k: (v.copy() if k == "pinned" else v.copy().view(DeviceArray)) for k, v in initial.items()}
    steps = [BuiltStep(calls=[], outputs={name: array}) for name, array in buffers.items()]
    stream = _Stream()

    def taken(contents: dict[str, np.ndarray]) -> Any:
        for name, array in contents.items():
            buffers[name][...] = array
        return device_check.snapshot(stream, steps)

    first = taken(initial)
    assert set(first.host) == {"pinned"} and len(first) == 5
    judge = device_check.judge_against(first, taken(eager), stream)
    verdicts = {}
    for name, graph in _graphs(eager).items():
        verdicts[name] = judge(taken(graph))
        assert verdicts[name] == compare_outputs(initial, eager, graph), name
    assert verdicts["same"].match is True and "eager left keep unchanged" in verdicts["same"].detail
    assert "within rounding: a" in verdicts["rounding"].detail
    assert "b: 3 of 7 elements differ" in verdicts["b"].detail
    assert "c: 1 of 6 elements differ" in verdicts["nan"].detail
    assert "pinned: 1 of 4 elements differ" in verdicts["pinned"].detail


def test_counts_are_per_output_and_exact(device_check: types.ModuleType) -> None:
    arrays = {"x": np.zeros(5, np.float32).view(DeviceArray), "y": np.zeros(3, np.float32).view(DeviceArray)}
    steps = [BuiltStep(calls=[], outputs=dict(arrays))]
    before = device_check.snapshot(_Stream(), steps)
    arrays["x"][[0, 4]] = 1.0
    arrays["y"][:] = np.nan
    after = device_check.snapshot(_Stream(), steps)
    assert device_check.differing_counts(before, after, _Stream()) == {"x": 2, "y": 3}
    assert device_check.differing_counts(after, after, _Stream()) == {"x": 0, "y": 0}  # NaN equals NaN
