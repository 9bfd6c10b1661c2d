import math

import numpy as np
import pandas as pd
import pytest
from builders import make_run

from launchbench.analysis.costmodel import fit_cost_model, fit_line
from launchbench.analysis.table import run_table


def test_fit_recovers_an_exact_line():
    x = np.array([1, 10, 100, 1000])
    fit = fit_line(x, 2.0 + 0.5 * x)
    assert fit["fixed"] == pytest.approx(2.0)
    assert fit["per"] == pytest.approx(0.5)
    assert fit["r2"] == pytest.approx(1.0)


def table_from_lines(
    eager: tuple[float, float], graph: tuple[float, float], lengths: tuple[int, ...] = (1, 10, 100, 1000)
) -> pd.DataFrame:
    rows = []
    for mode, (fixed, per) in (("eager", eager), ("graph", graph)):
        for n in lengths:
            rows.append(
                {
                    "scenario": "s",
                    "chain": "c",
                    "params": f'{{"length": {n}}}',
                    "mode": mode,
                    "status": "ok",
                    "launches_per_iter": n,
                    "wall_us_per_iter": fixed + per * n,
                }
            )
    return pd.DataFrame(rows)


def test_crossover_where_the_graph_costs_more_up_front():
    model = fit_cost_model(table_from_lines(eager=(1.0, 6.0), graph=(25.0, 0.5)))
    row = model[model["mode"] == "graph"].iloc[0]
    assert row["crossover_launches"] == pytest.approx(24.0 / 5.5)
    assert row["saving_us_per_launch"] == pytest.approx(5.5)
    assert row["asymptotic_speedup"] == pytest.approx(12.0)


def test_no_crossover_when_the_graph_is_not_cheaper_per_launch():
    model = fit_cost_model(table_from_lines(eager=(1.0, 1.0), graph=(1.0, 2.0)))
    assert math.isinf(model["crossover_launches"].iloc[0])


def test_cost_model_of_a_run_table_has_one_row_per_chain_and_mode():
    model = fit_cost_model(run_table(make_run()))
    assert sorted(zip(model["chain"], model["mode"])) == [
        ("empty", "eager"),
        ("empty", "graph"),
        ("scale", "eager"),
        ("scale", "graph"),
    ]
    empty_eager = model[(model["chain"] == "empty") & (model["mode"] == "eager")].iloc[0]
    assert empty_eager["per_launch_us"] == pytest.approx(6.5, rel=0.05)
    assert empty_eager["per_launch_us_se"] > 0


def test_chains_without_varying_length_are_left_out():
    table = table_from_lines((1, 1), (2, 0.1))
    table["params"] = "{}"
    table["launches_per_iter"] = 5
    assert fit_cost_model(table).empty


def test_crossover_standard_error_matches_its_spread_over_repeated_fits():
    """The delta-method SE of the crossover includes each fit's intercept–slope covariance: over 1000
    noisy repetitions (3% relative noise, seeded) it is within 10% of the crossovers' standard
    deviation (without the covariance it came out 17% too wide)."""
    rng = np.random.default_rng(1)
    one = table_from_lines(eager=(1.0, 6.0), graph=(25.0, 0.5), lengths=(1, 3, 10, 30, 100))
    table = pd.concat(
        [one.assign(chain=f"c{i}") for i in range(1000)], ignore_index=True
    )  # one fit per chain
    table["wall_us_per_iter"] *= 1 + 0.03 * rng.standard_normal(len(table))
    fits = fit_cost_model(table)
    graph = fits[fits["mode"] == "graph"]
    assert len(graph) == 1000
    crossovers, errors = graph["crossover_launches"], graph["crossover_launches_se"]
    assert float(np.median(errors)) == pytest.approx(float(np.std(crossovers)), rel=0.10)
