"""What the passes added for host levels buy, and what they cost: the runner's loop (launchbench.run.
extra_passes) simulated on synthetic pass medians of one row, under two rules for when a row asks:

- ``until the cap``: every row whose levels want passes (``Levels.wants_passes``) asks, round after
  round, until the case has run twice its planned passes (the rule before this study);
- ``one apart, J more``: the same, except that a row whose one level has a single pass apart stops
  asking once J passes have been added without a second pass joining it (``row_asks``; the runner's
  J is APART_PASSES).

For each model of a row (one level, normal or heavy-tailed t3 spread; two levels like the H200's eager
launches; a rarer second level) and each rule: the mean count of added passes, the share of rows that
end at two levels, and the share that end with passes apart; and for a run of CASES cases, one such
row each, the run's count of passes (an added pass holds every case that asks, so the case that asks
longest sets it).

    python benchmarks/added_passes_study.py [--trials 1000] [--run-trials 300] [--out results/levels/added_passes_study.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from levels_study import publish

from launchbench.measure.levels import Levels, find_levels
from launchbench.run.extra_passes import APART_PASSES, EXTRA_PASS_FACTOR, row_asks

PLANNED = 5
CAP = EXTRA_PASS_FACTOR * PLANNED  # the runner's cap on a case of PLANNED passes
Draw = Callable[[np.random.Generator], float]  # one pass median
Rule = Callable[[Levels, int], bool]  # (levels, passes done) -> asks for another pass


CASES = 8  # a run like the quickstart: 8 cases, each with one host-bound row that may ask


@dataclass(frozen=True)
class Outcome:
    added: float  # mean passes added
    two: float  # share of rows that end at two levels
    apart: float  # share of rows that end with passes apart from one level
    capped: float  # share of rows that ran to the cap


def until_cap(levels: Levels, done: int) -> bool:
    return levels.wants_passes


def one_apart(more: int) -> Rule:
    return lambda levels, done: row_asks(levels, done - PLANNED, more)


def one_row(draw: Draw, rule: Rule, rng: np.random.Generator) -> tuple[int, Levels]:
    """The passes one row's case ends with, and its levels then."""
    values = [draw(rng) for _ in range(PLANNED)]
    levels = find_levels(values)
    while len(values) < CAP and rule(levels, len(values)):
        values.append(draw(rng))
        levels = find_levels(values)
    return len(values), levels


def simulate(draw: Draw, rule: Rule, trials: int, rng: np.random.Generator) -> Outcome:
    ends = [one_row(draw, rule, rng) for _ in range(trials)]
    added = [n - PLANNED for n, _ in ends]
    capped = [n == CAP for n, _ in ends]
    two = [levels.two for _, levels in ends]
    apart = [bool(levels.apart) for _, levels in ends]
    return Outcome(*(float(np.mean(x)) for x in (added, two, apart, capped)))


def run_passes(draw: Draw, rule: Rule, trials: int, rng: np.random.Generator) -> tuple[float, float]:
    """A run of CASES cases, one such row each: the mean count of its passes (the planned ones and the
    most any case added: an added pass holds every case that asks) and the share run to the cap."""
    runs = [max(one_row(draw, rule, rng)[0] for _ in range(CASES)) for _ in range(trials)]
    return float(np.mean(runs)), float(np.mean([n == CAP for n in runs]))


def one_level(spread: float, heavy: bool) -> Draw:
    if heavy:
        return lambda rng: float(np.exp(spread * rng.standard_t(3)))
    return lambda rng: float(np.exp(rng.normal(0, spread)))


def two_levels(low: float, high: float, high_share: float, low_spread: float, high_spread: float) -> Draw:
    def draw(rng: np.random.Generator) -> float:
        if rng.random() < high_share:
            return float(high * np.exp(rng.normal(0, high_spread)))
        return float(low * np.exp(rng.normal(0, low_spread)))

    return draw


MODELS: tuple[tuple[str, Draw], ...] = (
    ("one level, normal, 1% spread", one_level(0.01, False)),
    ("one level, normal, 3% spread", one_level(0.03, False)),
    ("one level, normal, 5% spread", one_level(0.05, False)),
    ("one level, t3, 3% spread", one_level(0.03, True)),
    ("one level, t3, 5% spread", one_level(0.05, True)),
    ("two levels, H200 eager: 4.6 µs (3%) and 6.0 µs (4%), 60% high", two_levels(4.6, 6.0, 0.6, 0.03, 0.04)),
    ("two levels, 4.6 µs (3%) and 6.0 µs (4%), 25% high", two_levels(4.6, 6.0, 0.25, 0.03, 0.04)),
    ("two levels, 4.6 µs (3%) and 6.0 µs (4%), 15% high", two_levels(4.6, 6.0, 0.15, 0.03, 0.04)),
)


def _rules() -> list[tuple[str, Rule]]:
    rules: list[tuple[str, Rule]] = [("until the cap", until_cap)]
    for j in (1, 2, 3):
        rules.append(
            (f"one apart, {j} more" + (" (the runner's)" if j == APART_PASSES else ""), one_apart(j))
        )
    return rules


def table(trials: int, seed: int) -> list[str]:
    rows = [
        "| model | rule | passes added (mean) | ran to the cap | ends at two levels | ends with passes apart |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, draw in MODELS:
        for rule_name, rule in _rules():
            out = simulate(draw, rule, trials, np.random.default_rng(seed))  # the same draws for both rules
            rows.append(
                f"| {name} | {rule_name} | {out.added:.2f} | {out.capped:.1%} | {out.two:.1%} | {out.apart:.1%} |"
            )
    return rows


def run_table(trials: int, seed: int) -> list[str]:
    rows = [
        f"| model of each case's row | rule | the run's passes (mean) | runs to the cap ({CAP}) |",
        "|---|---|---:|---:|",
    ]
    for name, draw in (MODELS[4], MODELS[5]):
        for rule_name, rule in _rules():
            passes, capped = run_passes(draw, rule, trials, np.random.default_rng(seed))
            rows.append(f"| {name} | {rule_name} | {passes:.2f} | {capped:.1%} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--run-trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [
        "# Passes added for host levels, simulated",
        "",
        f"`python benchmarks/added_passes_study.py --trials {args.trials} --seed {args.seed}`: one row, "
        f"{PLANNED} planned passes, the cap at {CAP}; both rules see the same draws.",
        "",
        "## One row",
        "",
        *table(args.trials, args.seed),
        "",
        f"## A run of {CASES} cases",
        "",
        f"Each case with one row of the model (`--run-trials {args.run_trials}` runs).",
        "",
        *run_table(args.run_trials, args.seed),
        "",
    ]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
