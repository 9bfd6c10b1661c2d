"""Power study of compare (separate runs) and ab (paired rounds) on the committed H200 passes.

    python benchmarks/power_study.py [--out results/power] [--splits 100] [--draws 400] [--raw]
        [--ab-runs results/ab-h200/lockstep/aa-1,results/ab-h200/lockstep/aa-2 ...]

results/power/power_study.md was made with --out results/power and one --ab-runs naming four ab A/A
invocations of the quickstart: results/ab-h200/lockstep/aa-1,…/aa-2,…/aa-3 (--max-time 2, 5 passes)
and results/ab-h200/defaults/aa-1 (ab's defaults: 4 s over 10 rounds); either way 0.4 s of a case per
side and round. 25 rounds in all, 10 drawn per resample. results/power/trim-0 and trim-10: the same
with --round-trim 0 and 0.1 (ab's rounds untrimmed, and trimmed by one round at each end).

The unit is the pass. Sources: results/quickstart-h200 and -b (two back-to-back runs of the same code,
5 passes each) and -longer (a third run, same case ids), every pass's raw samples as measured.

compare, separate runs: the 10 passes of the two A/A runs are split into a baseline and a current of 5
each (all 252 splits for the A/A rates; ``--splits`` random ones per injected slowdown); the same split
for every row, so rows keep the host states they shared. A slowdown multiplies every sample of the
current side.

ab, paired rounds: a round is one pass of one run cut in two halves, its first half one side and its
second half the other (which side goes first alternates, as ab alternates A B / B A); the 15 passes of
the three runs give 15 rounds, and a resample draws 10 of them (ab's default rounds), the same ones for
every row. Each side has half a pass's samples, so a round's ratio is noisier than in a real ab round
(conservative for detection). A slowdown multiplies every sample of side B.

ab, real rounds (``--ab-runs``, repeatable, each a comma-separated list of ab A/A directories): the
rounds of real interleaved ab invocations (round k = pass k of a/ and b/), 10 drawn per resample; a
slowdown multiplies side B.

Reported per kind of row (host-bound: eager and the one-launch graph; GPU-bound: the other graph rows):
the false-positive rate per row-metric (slower or faster in an A/A resample, every default metric),
the worst single row-metric, the rate per run (any row-metric of the resample slower or faster), and
the detection rate of wall_us_per_launch (slower) at slowdowns of 2, 5, 10, 20%; per row in
power_study_rows.md.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from launchbench.analysis import compare
from launchbench.analysis.compare import Comparison, compare_paired, compare_runs
from launchbench.analysis.drift import is_host_bound
from launchbench.cli.ab import AB_ROUNDS
from launchbench.results.schema import CaseResult, ModePass, RunRecord
from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("quickstart-h200", "quickstart-h200-b", "quickstart-h200-longer")
EFFECTS = (0.02, 0.05, 0.10, 0.20)
DETECT_METRIC = "wall_us_per_launch"
ROUNDS = AB_ROUNDS  # ab's default; a side's pass then has 0.4 s of a case's 4 s budget

Pass = dict[str, list[float]]  # one pass of one row: series → samples
RowPasses = dict[tuple[str, str], list[Pass]]  # (case id, mode) → passes in order


def passes_of(run: RunRecord) -> RowPasses:
    out: RowPasses = {}
    for case in run.cases:
        for mode, result in case.modes.items():
            if result.status not in ("ok", "budget"):
                continue
            sizes = result.pass_sizes or [len(next(iter(result.samples.values())))]
            cuts = np.cumsum([0, *sizes])
            out[(case.case_id, mode)] = [
                {k: list(v[cuts[i] : cuts[i + 1]]) for k, v in result.samples.items()}
                for i in range(len(sizes))
            ]
    return out


def with_passes(
    template: RunRecord, rows: dict[tuple[str, str], list[Pass]], factor: float = 1.0
) -> RunRecord:
    """The template run with each row's samples replaced by the given passes (× factor)."""
    cases: list[CaseResult] = []
    for case in template.cases:
        modes = dict(case.modes)
        for mode, result in case.modes.items():
            chosen = rows.get((case.case_id, mode))
            if chosen is None:
                continue
            passes = [
                ModePass(
                    iters_per_sample=max(1, result.iters_per_sample),
                    samples={k: [x * factor for x in p[k]] for k in p},
                )
                for p in chosen
            ]
            modes[mode] = result.model_copy(update={"passes": passes})
        cases.append(case.model_copy(update={"modes": modes, "passes_done": len(next(iter(rows.values())))}))
    return template.model_copy(update={"cases": cases})


def outcomes(
    comparison: Comparison, host_bound: set[tuple[str, str]], effect: float
) -> Iterator[dict[str, object]]:
    for row in comparison.rows:
        for mc in row.metrics:
            if mc.compared:
                kind = "host-bound" if (row.case, row.mode) in host_bound else "GPU-bound"
                yield {
                    "row": f"{row.case} [{row.mode}]",
                    "kind": kind,
                    "metric": mc.metric,
                    "effect": effect,
                    "verdict": mc.verdict,
                    "mde": mc.mde,
                }


def compare_study(
    runs: Sequence[RunRecord], host_bound: set[tuple[str, str]], splits: int, rng: np.random.Generator
) -> pd.DataFrame:
    a, b = passes_of(runs[0]), passes_of(runs[1])
    pooled = {key: a[key] + b[key] for key in a if key in b}
    all_splits = list(itertools.combinations(range(10), 5))
    records = []
    for effect in (0.0, *EFFECTS):
        chosen = (
            all_splits
            if effect == 0.0
            else [all_splits[i] for i in rng.choice(len(all_splits), splits, replace=False)]
        )
        for n, left in enumerate(chosen):
            right = [i for i in range(10) if i not in left]
            base = with_passes(runs[0], {k: [p[i] for i in left] for k, p in pooled.items()})
            cur = with_passes(runs[0], {k: [p[i] for i in right] for k, p in pooled.items()}, 1 + effect)
            for item in outcomes(compare_runs(base, cur), host_bound, effect):
                records.append({**item, "resample": n})
    return pd.DataFrame(records)


def ab_study(
    runs: Sequence[RunRecord], host_bound: set[tuple[str, str]], draws: int, rng: np.random.Generator
) -> pd.DataFrame:
    slots = []  # (run, pass index) → per row, (A half, B half)
    for r, run in enumerate(runs):
        rows = passes_of(run)
        for k in range(min(len(p) for p in rows.values())):
            halves = {}
            for key, passes in rows.items():
                one = passes[k]
                n = len(next(iter(one.values())))
                first = {s: v[: n // 2] for s, v in one.items()}
                second = {s: v[n // 2 :] for s, v in one.items()}
                halves[key] = (first, second) if (r + k) % 2 == 0 else (second, first)
            slots.append(halves)
    keys = set.intersection(*(set(s) for s in slots))
    records = []
    for effect in (0.0, *EFFECTS):
        for n in range(draws if effect == 0.0 else draws // 2):
            chosen = [slots[i] for i in rng.choice(len(slots), ROUNDS, replace=False)]
            a = with_passes(runs[0], {k: [s[k][0] for s in chosen] for k in keys})
            b = with_passes(runs[0], {k: [s[k][1] for s in chosen] for k in keys}, 1 + effect)
            for item in outcomes(compare_paired(a, b), host_bound, effect):
                records.append({**item, "resample": n})
    return pd.DataFrame(records)


def real_ab_study(
    dirs: Sequence[Path], host_bound: set[tuple[str, str]], draws: int, rng: np.random.Generator
) -> pd.DataFrame:
    template = load_run(dirs[0] / "a")
    slots = []
    for folder in dirs:
        a, b = passes_of(load_run(folder / "a")), passes_of(load_run(folder / "b"))
        for k in range(min(len(p) for p in a.values())):
            slots.append({key: (a[key][k], b[key][k]) for key in a if key in b})
    keys = set.intersection(*(set(s) for s in slots))
    records = []
    for effect in (0.0, *EFFECTS):
        for n in range(draws if effect == 0.0 else draws // 2):
            chosen = [slots[i] for i in rng.choice(len(slots), ROUNDS, replace=False)]
            a_run = with_passes(template, {k: [s[k][0] for s in chosen] for k in keys})
            b_run = with_passes(template, {k: [s[k][1] for s in chosen] for k in keys}, 1 + effect)
            for item in outcomes(compare_paired(a_run, b_run), host_bound, effect):
                records.append({**item, "resample": n})
    return pd.DataFrame(records)


def summarize(frame: pd.DataFrame, method: str) -> pd.DataFrame:
    aa = frame[frame["effect"] == 0.0].assign(directional=lambda f: f["verdict"].isin(["slower", "faster"]))
    rows = []
    for kind, group in aa.groupby("kind"):
        per_row_metric = group.groupby(["row", "metric"])["directional"].mean()
        detect = frame[(frame["kind"] == kind) & (frame["metric"] == DETECT_METRIC) & (frame["effect"] > 0)]
        rates = detect.assign(hit=detect["verdict"] == "slower").groupby("effect")["hit"].mean()
        mde = group[group["metric"] == DETECT_METRIC]["mde"].median()
        rows.append(
            {
                "method": method,
                "rows": kind,
                "FP rate per row-metric %": 100 * group["directional"].mean(),
                "worst row-metric FP %": 100 * per_row_metric.max(),
                "median MDE %": 100 * mde,
                **{f"detects +{e * 100:.0f}% %": 100 * rates.get(e, np.nan) for e in EFFECTS},
            }
        )
    per_run = aa.groupby("resample")["directional"].any().mean()
    for row in rows:
        row["FP rate per run %"] = 100 * per_run
    return pd.DataFrame(rows)


def per_row(frame: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per row: the detection rate of wall_us_per_launch (slower) at each slowdown, and its median MDE."""
    detect = frame[(frame["metric"] == DETECT_METRIC) & (frame["effect"] > 0)]
    rates = detect.assign(hit=detect["verdict"] == "slower").groupby(["row", "kind", "effect"])["hit"].mean()
    table = (100 * rates).unstack("effect").rename(columns=lambda e: f"detects +{e * 100:.0f}% %")
    aa = frame[(frame["metric"] == DETECT_METRIC) & (frame["effect"] == 0.0)]
    table["median MDE %"] = 100 * aa.groupby(["row", "kind"])["mde"].median()
    return (
        table.reset_index()
        .sort_values(["kind", "row"])
        .assign(method=method)[["method", "kind", "row", *[c for c in table.columns]]]
    )


def markdown(table: pd.DataFrame) -> str:
    def cell(value: object) -> str:
        return f"{value:.1f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--splits", type=int, default=100, help="random splits per injected slowdown (compare)"
    )
    parser.add_argument(
        "--draws", type=int, default=400, help="A/A draws of rounds (ab); half as many per slowdown"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--round-trim",
        type=float,
        help="share of ab's rounds trimmed from each end (default: compare.ROUND_TRIM)",
    )
    parser.add_argument(
        "--raw", action="store_true", help="also write every resample's verdicts (power_study_raw.csv.gz)"
    )
    parser.add_argument(
        "--ab-runs", action="append", default=[], metavar="DIR,DIR", help="real ab A/A directories (a/, b/)"
    )
    args = parser.parse_args()
    if args.round_trim is not None:
        compare.ROUND_TRIM = args.round_trim
    runs = [load_run(ROOT / "results" / name) for name in SOURCES]
    host_bound = {(c.case_id, mode) for c in runs[0].cases for mode in c.modes if is_host_bound(c, mode)}
    rng = np.random.default_rng(args.seed)
    separate = compare_study(runs[:2], host_bound, args.splits, rng)
    paired = ab_study(runs, host_bound, args.draws, rng)
    parts = [summarize(separate, "compare (separate runs)"), summarize(paired, "ab (half passes as rounds)")]
    rows = [per_row(separate, "compare (separate runs)"), per_row(paired, "ab (half passes as rounds)")]
    frames = [separate.assign(method="compare"), paired.assign(method="ab-halves")]
    for spec in args.ab_runs:
        dirs = [ROOT / d if not Path(d).is_absolute() else Path(d) for d in spec.split(",")]
        real = real_ab_study(dirs, host_bound, args.draws, rng)
        label = f"ab (real rounds: {', '.join(str(d.relative_to(ROOT)) if d.is_relative_to(ROOT) else str(d) for d in dirs)})"
        parts.append(summarize(real, label))
        rows.append(per_row(real, label))
        frames.append(real.assign(method=label))
    table = pd.concat(parts, ignore_index=True)
    text = markdown(table)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "power_study.md").write_text(text + "\n")
        (args.out / "power_study_rows.md").write_text(markdown(pd.concat(rows, ignore_index=True)) + "\n")
        if args.raw:
            pd.concat(frames).to_csv(args.out / "power_study_raw.csv.gz", index=False)


if __name__ == "__main__":
    main()
