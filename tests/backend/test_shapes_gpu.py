"""GPU tests of chains whose sizes change (`pytest -m gpu`; skipped without CuPy and a device): every
strategy's outputs against eager's at every shape, the counts each one makes, a refused update that falls
back to re-capture, a cache that holds fewer graphs than there are shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
DATA = Path(__file__).parents[1] / "data" / "gpu"
MODES = {"eager", "recapture", "cache", "update"}


def _case(chain: str, **changes):
    import dataclasses

    (case,) = [c for c in expand_scenario(DATA / "shapes.yaml") if c.chain == chain]
    if changes:
        case = dataclasses.replace(case, shapes=dataclasses.replace(case.shapes, **changes))
    return case


def _run(backend, case):
    from launchbench.run.execute import execute_case

    result = execute_case(backend, case, backend.clock)
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("chain", ["elementwise", "reduction", "raw", "two_streams"])
def test_every_strategy_writes_what_eager_writes_at_every_shape(backend, chain):
    result = _run(backend, _case(chain))
    assert result.outputs_match is True, result.check_detail
    assert "equal eager over every one of 3 shapes" in str(result.check_detail)
    assert set(result.modes) == MODES
    for mode, outcome in result.modes.items():
        assert outcome.status in ("ok", "budget"), (mode, outcome.reason)
        assert min(outcome.samples["gpu_s_per_iter"]) > 0
        counts = outcome.shape_counts
        assert counts is not None and counts.changes > 0 and counts.iterations >= 2 * counts.changes - 2
    recapture = result.modes["recapture"].shape_counts
    assert recapture.recaptures == recapture.changes and recapture.setup_s > 0
    cache = result.modes["cache"].shape_counts
    assert (
        cache.cache_hits == cache.changes and cache.cache_misses == 0 == cache.recaptures
    )  # filled by priming
    update = result.modes["update"].shape_counts
    assert update.updates + update.update_refusals == update.changes
    if (
        chain != "reduction"
    ):  # CuPy may pick other reduction kernels at another size; the others keep their nodes
        assert update.updates == update.changes and update.update_refusals == 0 == update.recaptures


def test_an_update_the_gpu_refuses_falls_back_to_recapture_and_says_why(backend):
    result = _run(backend, _case("grows"))
    assert result.outputs_match is True, result.check_detail
    counts = result.modes["update"].shape_counts
    assert counts.update_refusals > 0 and counts.recaptures == counts.update_refusals
    assert counts.updates + counts.update_refusals == counts.changes
    reasons = list(counts.refusal_reasons)
    assert all("GraphExecUpdate" in reason for reason in reasons), reasons
    assert any("opology" in reason for reason in reasons), reasons  # one kernel against two
    assert sum(counts.refusal_reasons.values()) == counts.update_refusals


def test_a_cache_smaller_than_the_shapes_misses_at_every_change(backend):
    result = _run(backend, _case("elementwise", cache_limit=2))
    assert result.outputs_match is True, result.check_detail
    cache = result.modes["cache"].shape_counts
    assert cache.cache_misses == cache.recaptures == cache.changes > 0 and cache.cache_hits == 0


def test_the_graph_command_draws_the_first_shape(backend):
    prepared = backend.prepare(_case("elementwise"))
    try:
        dot = prepared.graph_dot()
    finally:
        prepared.close()
    assert dot.lstrip().startswith("digraph")
