"""Arithmetic on parameters inside a scenario: ``"${ceil(length * 1.1)}"``, ``"${n * 4}"``.

Parsed with ``ast`` and evaluated over a whitelist (numbers, parameter names, + - * / // % **, unary
minus, and ceil, floor, round, int, min, max); nothing else is ever executed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "round": round,
    "int": int,
    "min": min,
    "max": max,
}
MAX_EXPRESSION = 200
MAX_MAGNITUDE = 1e18  # every intermediate value stays below this, so no expression can take long


class ExpressionError(ValueError):
    pass


def names_in(expression: str) -> set[str]:
    """Parameter names an expression uses (empty when it does not parse)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(expression: str, params: Mapping[str, Any]) -> int | float:
    if len(expression) > MAX_EXPRESSION:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise ExpressionError(f"'{expression}' is not an arithmetic expression") from None
    value = _eval(tree.body, params)  # finite: every step stays within ±MAX_MAGNITUDE
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _eval(node: ast.AST, params: Mapping[str, Any]) -> Any:
    value = _eval_node(node, params)
    if isinstance(value, complex):  # (-8) ** 0.5
        raise ExpressionError(f"'{ast.unparse(node)}' is not a real number")
    if isinstance(value, (int, float)) and abs(value) > MAX_MAGNITUDE:
        raise ExpressionError(f"'{ast.unparse(node)}' exceeds {MAX_MAGNITUDE:.0e}")
    return value


def _eval_node(node: ast.AST, params: Mapping[str, Any]) -> Any:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in params:
            raise ExpressionError(
                f"unknown parameter '{node.id}' (parameters: {', '.join(sorted(params)) or 'none'})"
            )
        value = params[node.id]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ExpressionError(f"parameter '{node.id}' is not a number")
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, params), _eval(node.right, params)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ExpressionError("exponent too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except (ZeroDivisionError, OverflowError) as err:
            raise ExpressionError(str(err)) from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, params)
        return -value if isinstance(node.op, ast.USub) else value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(arg, params) for arg in node.args]
        try:
            return _FUNCTIONS[node.func.id](*args)
        except (TypeError, ValueError, OverflowError) as err:
            raise ExpressionError(f"{node.func.id}(): {err}") from None
    raise ExpressionError(f"'{ast.unparse(node)}' is not allowed in an expression")
