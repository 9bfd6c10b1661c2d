"""The CI widths of several old-against-new comparisons of speed_quickstart.py, pooled: is a mode's 95% CI
wider under the new code once every comparison's runs count?

Each comparison is a set of ``runs.tar.gz`` files that speed_device.sh wrote (their ``quickstart/old-N``
and ``quickstart/new-N`` run directories, each with its results.csv). Per comparison and per mode
(eager, graph, both), width_test.overall gives the new/old ratio of the runs' mean log widths with its
95% interval (Welch's t over the runs); the comparisons are then pooled by inverse variance on the log
scale (a fixed-effect meta-analysis on each comparison's Welch standard error, the pooled interval from
the normal quantile: with 5–6 runs a side in each comparison it is a little narrower than a t interval
would be), with Cochran's Q for whether the comparisons disagree more than their errors allow:

    python benchmarks/width_meta.py \\
        "H100 call 3=results/speed/quickstart-h100-2026-12-07-c/call-3/runs.tar.gz" \\
        "H200=results/speed/quickstart-h200-2026-12-07/call-1/runs.tar.gz,results/speed/quickstart-h200-2026-12-07/call-2/runs.tar.gz" \\
        --out results/speed/quickstart-widths-pooled.txt

Pool only comparisons of the same old code and the same new budget: the pooled ratio is then what the
new code does to a mode's widths on these machines, and the interval's upper end the widening that all
the runs together could not have missed."""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scipy import stats
from speed_quickstart import read_widths
from width_test import OverallWidth, RowKey, overall

# tarfile's "data" filter (no links or devices out of an archive) came in Python 3.11.4 and 3.10.12
EXTRACT = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
MODES: dict[str, Callable[[RowKey], bool]] = {
    "eager": lambda key: key[1] == "eager",
    "graph": lambda key: key[1] == "graph",
    "both": lambda key: True,
}


@dataclass(frozen=True)
class LogRatio:
    """A new/old width ratio on the log scale with its standard error."""

    log_ratio: float
    se: float


@dataclass(frozen=True)
class Pooled:
    """The inverse-variance pooled ratio, its 95% interval, and Cochran's Q with its p value."""

    ratio: float
    low: float
    high: float
    q: float
    p_heterogeneity: float
    comparisons: int


def log_ratio(width: OverallWidth) -> LogRatio:
    """The comparison's log ratio and its Welch standard error."""
    return LogRatio(math.log(width.ratio), width.log_se)


def pooled(estimates: Sequence[LogRatio]) -> Pooled:
    """Fixed-effect pooling of the comparisons' log ratios, weights 1/se²."""
    weights = [1 / e.se**2 for e in estimates]
    mean = sum(w * e.log_ratio for w, e in zip(weights, estimates)) / sum(weights)
    se = (1 / sum(weights)) ** 0.5
    q = sum(w * (e.log_ratio - mean) ** 2 for w, e in zip(weights, estimates))
    dof = len(estimates) - 1
    p = float(stats.chi2.sf(q, dof)) if dof else 1.0
    return Pooled(
        math.exp(mean), math.exp(mean - 1.96 * se), math.exp(mean + 1.96 * se), q, p, len(estimates)
    )


Widths = Mapping[RowKey, float]


def mode_width(old: Sequence[Widths], new: Sequence[Widths], mode: str) -> OverallWidth | None:
    """width_test.overall over the rows of one mode (or both)."""
    keep = MODES[mode]
    return overall(
        [{k: v for k, v in w.items() if keep(k)} for w in old],
        [{k: v for k, v in w.items() if keep(k)} for w in new],
    )


def read_sides(tarballs: Sequence[Path], folder: Path) -> tuple[list[Widths], list[Widths]]:
    """Every old and new run's widths in the tarballs (each unpacked into a folder of its own)."""
    sides: dict[str, list[Widths]] = {"old": [], "new": []}
    for n, tarball in enumerate(tarballs):
        target = folder / str(n)
        with tarfile.open(tarball) as archive:
            archive.extractall(target, **EXTRACT)
        for side, runs in sides.items():
            runs += [read_widths(d) for d in sorted(target.glob(f"**/{side}-*")) if d.is_dir()]
    return sides["old"], sides["new"]


def report(comparisons: Mapping[str, tuple[list[Widths], list[Widths]]]) -> list[str]:
    """One line per comparison and mode, then the pooled line per mode."""
    lines = []
    estimates: dict[str, list[LogRatio]] = {mode: [] for mode in MODES}
    for name, (old, new) in comparisons.items():
        for mode in MODES:
            width = mode_width(old, new, mode)
            if width is None:
                continue
            estimates[mode].append(log_ratio(width))
            lines.append(
                f"{name}: {mode} {width.ratio:.3f} [{width.low:.2f}, {width.high:.2f}]"
                f" ({width.old_runs} old runs, {width.new_runs} new)"
            )
    for mode, found in estimates.items():
        if found:
            p = pooled(found)
            lines.append(
                f"pooled over {p.comparisons}: {mode} {p.ratio:.3f} [{p.low:.2f}, {p.high:.2f}];"
                f" Cochran's Q {p.q:.2f} on {p.comparisons - 1} df, p {p.p_heterogeneity:.2f}"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("comparisons", nargs="+", help="NAME=TARBALL[,TARBALL...]")
    parser.add_argument("--out", type=Path, help="write the lines here as well")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        comparisons = {}
        for n, given in enumerate(args.comparisons):
            name, _, files = given.partition("=")
            folder = Path(tmp) / str(n)
            comparisons[name] = read_sides([Path(f) for f in files.split(",")], folder)
        lines = report(comparisons)
    print("\n".join(lines))
    if args.out is not None:
        given = sys.argv[1:] if argv is None else list(argv)
        command = "# " + shlex.join(["python", "benchmarks/width_meta.py", *given])
        args.out.write_text("\n".join([command, *lines]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
