"""results.csv and the host's drift: host-bound rows' CIs cover it, GPU-bound rows keep their own."""
import math

import pytest
from builders import make_run

from launchbench.analysis.drift import HostDrift, host_drift, is_host_bound
from launchbench.analysis.table import run_table


def test_host_bound_rows_are_eager_and_the_one_launch_graph():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.35))
    bound = {(c.case_id, mode) for c in run.cases for mode in c.modes if is_host_bound(c, mode)}
    assert {key for key in bound if key[1] == "graph"} == {("empty/length=1", "graph")}
    assert {c.case_id for c in run.cases} == {key[0] for key in bound if key[1] == "eager"}


def test_results_csv_widens_host_bound_rows_by_the_drift_of_one_pass():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.35))
    table = run_table(run).set_index(["case", "mode"])
    drift = host_drift((run,), ["wall_us_per_launch"])["wall_us_per_launch"]
    factor = math.exp(drift.half_width())
    assert factor > 1.2
    eager = table.loc[("empty/length=100", "eager")]
    assert bool(eager["host_bound"])
    assert eager["wall_us_per_launch_ci_low"] <= eager["wall_us_per_launch"] / factor * (1 + 1e-9)
    assert eager["wall_us_per_launch_ci_high"] >= eager["wall_us_per_launch"] * factor * (1 - 1e-9)
    graph = table.loc[("empty/length=1000", "graph")]
    assert not bool(graph["host_bound"])
    assert graph["wall_us_per_launch_ci_high"] / graph["wall_us_per_launch_ci_low"] < 1.05
    # the CPU time of a GPU-bound row is the host's own time: widened too
    assert graph["cpu_us_per_launch_ci_high"] >= graph["cpu_us_per_launch"] * factor * 0.9


def test_a_steady_host_barely_widens_anything():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.0))
    table = run_table(run)
    eager = table[table["mode"] == "eager"]
    assert (eager["wall_us_per_launch_ci_high"] / eager["wall_us_per_launch_ci_low"] < 1.1).all()


def test_host_drift_needs_a_degree_of_freedom() -> None:
    with pytest.raises(ValueError, match="degree of freedom"):
        HostDrift(variance=0.01, df=0)
