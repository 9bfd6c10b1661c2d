"""How numbers read in text: a median, a relative change, the CI of a change. One home for the gate's
messages, the markdown tables and the console tables, so they all say the same thing the same way."""

from __future__ import annotations

import math


def format_number(x: float, missing: str = "") -> str:
    """A median in µs to four significant digits, e.g. '6.595' or '3224'."""
    return missing if math.isnan(x) else f"{x:.4g}"


def format_change(x: float, missing: str = "") -> str:
    """A relative change (0.099 = 9.9% slower) as a signed percentage, e.g. '+9.9%'."""
    return missing if math.isnan(x) else f"{x * 100:+.1f}%"


def format_change_ci(low: float, high: float, missing: str = "", sep: str = " … ") -> str:
    """The 95% CI of a relative change, e.g. '-1.4% … +1.3%'."""
    return (
        missing if math.isnan(low) or math.isnan(high) else f"{format_change(low)}{sep}{format_change(high)}"
    )


def format_p(p: float, missing: str = "") -> str:
    """A p-value to two significant digits, e.g. '4.1e-80'."""
    return missing if math.isnan(p) else f"{p:.2g}"


def format_change_summary(
    baseline: float, current: float, change: float, ci: tuple[float, float], p: float, *more: str
) -> str:
    """'6.595 → 13.3 µs (+101.6%, 95% CI +51.0% to +170.1%, p=4.1e-80)'; ``more`` adds items in the parentheses."""
    items = [
        format_change(change, "—"),
        f"95% CI {format_change_ci(*ci, '—', sep=' to ')}",
        f"p={format_p(p, '—')}",
        *more,
    ]
    return f"{format_number(baseline, '—')} → {format_number(current, '—')} µs ({', '.join(items)})"


def format_mde(x: float, missing: str = "") -> str:
    """A minimum detectable effect (0.38 = a 38% change), e.g. '38%' or '0.6%'."""
    return missing if math.isnan(x) else f"{x * 100:.2g}%" if x < 0.1 else f"{x * 100:.0f}%"
