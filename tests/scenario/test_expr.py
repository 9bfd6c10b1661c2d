import pytest

from launchbench.scenario.expr import ExpressionError, evaluate, names_in


def test_arithmetic_over_parameters():
    assert evaluate("ceil(length * 11 / 10)", {"length": 1}) == 2
    assert evaluate("n * 4", {"n": 250}) == 1000
    assert evaluate("max(1, n // 3)", {"n": 2}) == 1
    assert evaluate("2 ** 10", {}) == 1024
    assert names_in("ceil(a * b) + c") == {"a", "b", "c"}


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os')",
        "().__class__",
        "n.real",
        "[1, 2]",
        "lambda: 1",
        "open('x')",
        "1 / 0",
        "10 ** 1000",
        "n if n else 1",
        "(-8) ** 0.5",
    ],
)
def test_anything_but_arithmetic_is_refused(expression):
    with pytest.raises(ExpressionError):
        evaluate(expression, {"n": 3})


def test_huge_intermediate_values_are_refused():
    """Refused before they are computed: computing this one would not finish."""
    with pytest.raises(ExpressionError, match="exceeds"):
        evaluate("((((10**64)**64)**64)**64)**64", {})


def test_a_parameter_may_share_a_functions_name():
    assert names_in("round * 2 + round(x)") == {"round", "x"}
