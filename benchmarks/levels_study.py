"""How the host-level rule (launchbench.measure.levels) behaves on synthetic pass medians: how often it
reports two levels, or asks for more passes, when every pass comes from one level (normal and
heavy-tailed t3 spreads, in log units), and how often it finds two levels that are there.

    python benchmarks/levels_study.py [--trials 1000] [--out results/levels/levels_study.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from launchbench.measure.levels import find_levels

SPREADS = (0.01, 0.03, 0.05, 0.10)  # between-pass spread (standard deviation of the log pass median)
PASSES = (5, 10, 20)
# two levels like the H200's eager launches: 4.6 µs (3% spread) and 6.0 µs (4%), 60% of processes high
LOW, HIGH, LOW_SPREAD, HIGH_SPREAD, HIGH_SHARE = 4.6, 6.0, 0.03, 0.04, 0.6


def _rates(draws: list[np.ndarray]) -> tuple[float, float]:
    found = [find_levels(list(d)) for d in draws]
    return float(np.mean([f.two for f in found])), float(np.mean([f.wants_passes for f in found]))


def one_level_rows(trials: int, rng: np.random.Generator) -> list[str]:
    rows = [
        "| passes | spread | normal: two levels | normal: asks for passes | t3: two levels | t3: asks for passes |"
    ]
    rows.append("|---:|---:|---:|---:|---:|---:|")
    for n in PASSES:
        for spread in SPREADS:
            normal = _rates([np.exp(rng.normal(0, spread, n)) for _ in range(trials)])
            heavy = _rates([np.exp(spread * rng.standard_t(3, n)) for _ in range(trials)])
            rows.append(
                f"| {n} | {spread:.0%} | {normal[0]:.1%} | {normal[1]:.1%} | {heavy[0]:.1%} | {heavy[1]:.1%} |"
            )
    return rows


def two_level_rows(trials: int, rng: np.random.Generator) -> list[str]:
    rows = ["| passes | two levels found | among draws with ≥ 2 passes at each level | asks for passes |"]
    rows.append("|---:|---:|---:|---:|")
    for n in (5, 6, 10, 20):
        found, counted, asks = [], [], []
        for _ in range(trials):
            high = rng.random(n) < HIGH_SHARE
            values = np.where(
                high, HIGH * np.exp(rng.normal(0, HIGH_SPREAD, n)), LOW * np.exp(rng.normal(0, LOW_SPREAD, n))
            )
            levels = find_levels(list(values))
            found.append(levels.two)
            asks.append(levels.wants_passes)
            if min(high.sum(), n - high.sum()) >= 2:
                counted.append(levels.two)
        rows.append(f"| {n} | {np.mean(found):.1%} | {np.mean(counted):.1%} | {np.mean(asks):.1%} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(20)
    lines = [
        "# Host levels on synthetic pass medians",
        "",
        f"`python benchmarks/levels_study.py --trials {args.trials}` (seed 20).",
        "",
        "## One level (false alarms)",
        "",
        *one_level_rows(args.trials, rng),
        "",
        f"## Two levels: {LOW} µs ({LOW_SPREAD:.0%}) and {HIGH} µs ({HIGH_SPREAD:.0%}), {HIGH_SHARE:.0%} of passes high",
        "",
        *two_level_rows(args.trials, rng),
        "",
    ]
    publish(lines, args.out)


def publish(lines: list[str], out: Path | None) -> None:
    """The study's markdown, printed and, with ``out``, written there."""
    text = "\n".join(lines)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
