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
    return missing if math.isnan(low) or math.isnan(high) else f"{format_change(low)}{sep}{format_change(high)}"
