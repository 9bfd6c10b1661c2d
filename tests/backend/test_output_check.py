"""Graph output against eager output (numpy only, no GPU needed)."""

from __future__ import annotations

import numpy as np

from launchbench.backend.base import CaseRefused
from launchbench.backend.check import compare_outputs
from launchbench.errors import LaunchbenchError


def test_rounding_differences_pass_and_real_differences_are_counted_at_the_dtypes_tolerance() -> None:
    initial = {"x": np.zeros(4)}
    eager = {"x": np.array([1.0, 2.0, 3.0, 4.0])}
    within = {"x": eager["x"] * (1 + 1e-13)}
    check = compare_outputs(initial, eager, within)
    assert check.match and "within rounding: x" in check.detail
    # two elements off by 1e-8: beyond float64's 1e-12 (numpy's default 1e-5 tolerance counted 0 of them)
    beyond = {"x": eager["x"] * np.array([1, 1 + 1e-8, 1, 1 + 1e-8])}
    check = compare_outputs(initial, eager, beyond)
    assert check.match is False and "x: 2 of 4 elements differ" in check.detail


def test_a_refused_case_is_an_error_the_cli_reports_in_one_sentence() -> None:
    assert issubclass(CaseRefused, LaunchbenchError)
