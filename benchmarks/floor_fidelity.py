"""launchbench floor against standalone references, each in its own fresh process, alternated in rounds,
compared at the floor state (and level to level beside it).

The references: the C layer against benchmarks/floor_reference/launch.cu (built with nvcc: its
cuLaunchKernel loop for eager, its cuGraphLaunch loop for graph; its <<<>>> loop printed beside them),
each Python layer against its bare loop in benchmarks/floor_reference/bare_layers.py LAYER (which
imports nothing of launchbench and launches, bounds the queue and times a batch as launchbench does,
each batch as long as launchbench's samples: --sample-time). Each round runs one `launchbench floor`
process and BARE processes of every reference (bare first in odd rounds; the gpu layer's reference
once a round), so both sides meet the host states a process can sit in.

The comparison: a process's host-bound numbers move between several states on some hosts, for a
second or so at a time (on the H200 a one-node cuGraphLaunch from C at about 1.28, 1.45, 1.85 and
2.1 µs), and how often a side sits in the slower ones is the host's doing. So each row is decided at
the floor state: per layer, mode and argument count, each side's values (launchbench: the medians of
each floor process's sampler rounds; a reference: one per process) within FLOOR_BAND of that side's
lowest, the ratio of their medians within ±5% to pass, where each side has FLOOR_MIN values there.
Beside it, the level rows: each side's values split where the sorted values jump by more than
LEVEL_GAP (benchmarks/_levels.py, shared with benchmarks/fidelity.py), each launchbench level against
the reference's same level. fidelity.json keeps every value, so --reanalyse rebuilds the table from it.

Beside the decision, each reference against itself: its even-numbered processes against its odd-numbered
ones, by the same floor rule. Where a reference does not reproduce itself within ±5% on this host, no
±5% row against it can tell the harness from the host; the summary says how the floor rows fared where it
did and where it did not.

Then the draw of processes (benchmarks/_floor_draw.py): each floor row with its processes resampled,
its 95% range of ratios read as within or outside ±5% whatever the draw, or undecided with this many
processes on this host.

With --together N, each round also runs N processes of `bare_layers.py python`: every Python layer but
torch in one process, one after the other, as one floor process holds them. Its section holds
launchbench to that process and that process to one process per layer, each by the floor rule: where
launchbench agrees with the one process and the one process misses the per-layer ones the same way, a
process's shape, not launchbench's loop, moves the host state it meets.

Exit 0 when every compared floor row is within ±5%, 1 when one is not, 2 when a process failed (its
log names why; it is left out of its round, the others still compared).

    python benchmarks/floor_fidelity.py --launch BUILD/launch [--rounds 3] [--bare 3] [--together 0] [--max-time 6] [--out DIR]
    python benchmarks/floor_fidelity.py --reanalyse --out DIR
    python benchmarks/floor_fidelity.py --merge DIR1 DIR2 ... --out DIR   # several runs' values as one run's
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import _floor_draw
from _levels import FLOOR_BAND, LEVEL_GAP, floor_level, levels, match_levels

from launchbench.results.schema import GPU, WALL
from launchbench.results.store import load_run

HERE = Path(__file__).resolve().parent
BARE = HERE / "floor_reference" / "bare_layers.py"
BARE_LAYERS = ("bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu")
C_METHODS = {"cuLaunchKernel": "eager", "cuGraphLaunch": "graph", "triple_chevron": "chevron"}
TOLERANCE = 0.05
FLOOR_MIN = 2  # values each side needs at its floor state for the floor row to decide
VERDICT = {True: "yes", False: "NO", None: "not compared"}  # a row's within, as the tables print it
SAMPLE_TIME = 0.005  # launchbench's sample_time: the references' batches last as long
Key = tuple[str, str, int | None]  # layer, mode, argument count
Values = dict[Key, list[float]]  # µs per launch, one value per process
Counts = dict[Key, list[int]]  # how many of a key's values each process gave, in order
LEGACY_PER_PROCESS = 3  # fidelity.json files without counts: every committed run gave 3 values a process


@dataclass(frozen=True)
class LevelFidelity:
    """One layer, mode and argument count at one host level: launchbench's median over its processes
    at that level against the reference's; ``within`` None for a level only one side reached."""

    layer: str
    mode: str
    args: int | None
    level: str  # "floor" (the deciding row), "one" (both sides at one level), "low", "high" or "unmatched"
    reference: str
    launchbench_us: float
    reference_us: float
    ratio: float
    launchbench_n: int
    reference_n: int
    within: bool | None
    decides: bool = False  # the floor row: the exit status and the summary count these


def reference_name(layer: str, mode: str) -> str:
    """Which standalone program (and which of its loops) the row is held to."""
    if layer == "c":
        return "launch.cu " + ("cuLaunchKernel" if mode == "eager" else "cuGraphLaunch")
    return f"bare_layers.py {layer}"


def parse_reference(text: str) -> dict[Key, list[float]]:
    """The JSON lines of launch.cu or bare_layers.py as {(layer, mode, args): µs per launch}: the
    medians of its stretches where it printed them (``stretches_us``), else its one median."""
    values: dict[Key, list[float]] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        mode = C_METHODS[item["method"]] if "method" in item else item["mode"]
        found = item.get("stretches_us") or [item["us_per_launch"]]
        values[(item["layer"], mode, item.get("args"))] = [float(v) for v in found]
    return values


def _stretches(samples: list[float], parts: int) -> list[float]:
    """The medians of ``parts`` consecutive stretches of ``samples`` (time order), at least 5 samples each."""
    parts = max(1, min(parts, len(samples) // 5))
    size = len(samples) / parts
    return [statistics.median(samples[round(i * size) : round((i + 1) * size)]) for i in range(parts)]


def launchbench_values(run_dir: Path, stretches: int = 1) -> dict[Key, list[float]]:
    """A floor run's µs per launch by layer, mode and argument count (the gpu layer: GPU time per node):
    the medians of ``stretches`` consecutive stretches of each mode's samples (the host's level can move
    within a process, and one floor process samples every layer for seconds)."""
    values: dict[Key, list[float]] = {}
    for case in (c for c in load_run(run_dir).cases if c.kinds == "floor"):
        layer, args = case.params.get("layer", case.chain), case.params.get("args")
        for mode, result in case.modes.items():
            series = GPU if layer == "gpu" else WALL
            samples = result.samples.get(series, []) if result.status in ("ok", "budget") else []
            if samples and (layer != "gpu" or mode == "graph"):
                per_launch = [v * 1e6 / case.launches_per_iter for v in samples]
                values[(str(layer), mode, args)] = _stretches(per_launch, stretches)
    return values


def level_rows(key: Key, ours: list[float], theirs: list[float]) -> list[LevelFidelity]:
    """``key``'s rows: launchbench's per-process values against the reference's, level to level."""
    rows = []
    for level, mine, refs in match_levels(levels(ours), levels(theirs)):
        ratio = statistics.median(mine) / statistics.median(refs)
        within = None if level == "unmatched" else abs(ratio - 1.0) <= TOLERANCE
        rows.append(
            LevelFidelity(
                *key,
                level,
                reference_name(key[0], key[1]),
                statistics.median(mine),
                statistics.median(refs),
                ratio,
                len(mine),
                len(refs),
                within,
            )  # fmt: skip
        )
    return rows


def floor_row(key: Key, ours: list[float], theirs: list[float]) -> LevelFidelity:
    """``key``'s deciding row: each side's values at its floor state (within FLOOR_BAND of its lowest),
    the ratio of their medians; not compared where a side has fewer than FLOOR_MIN values there."""
    mine, refs = floor_level(ours), floor_level(theirs)
    ratio = statistics.median(mine) / statistics.median(refs)
    enough = min(len(mine), len(refs)) >= FLOOR_MIN
    within = abs(ratio - 1.0) <= TOLERANCE if enough else None
    name = reference_name(key[0], key[1])
    return LevelFidelity(
        *key, "floor", name, statistics.median(mine), statistics.median(refs), ratio, len(mine), len(refs), within, True
    )  # fmt: skip


def _key_order(key: Key) -> tuple[str, str, int]:
    """The table's order: layer, mode, then argument count (none first)."""
    return key[0], key[1], -1 if key[2] is None else key[2]


def fidelity(ours: Values, refs: Values) -> list[LevelFidelity]:
    """Every key both sides measured: its floor row, then level to level, in layer, mode and
    argument-count order."""
    keys = sorted(set(ours) & set(refs), key=_key_order)
    return [
        row
        for key in keys
        for row in (floor_row(key, ours[key], refs[key]), *level_rows(key, ours[key], refs[key]))
    ]


@dataclass(frozen=True)
class SelfCheck:
    """One reference against itself: its even-numbered processes' floor state against its odd-numbered
    ones'; ``within`` None where a half has fewer than FLOOR_MIN values at its floor."""

    layer: str
    mode: str
    args: int | None
    even_us: float
    odd_us: float
    ratio: float
    even_n: int
    odd_n: int
    within: bool | None


def processes(values: list[float], counts: list[int] | None) -> list[list[float]]:
    """``values`` cut into each process's values (``counts`` in order; without them, LEGACY_PER_PROCESS)."""
    if counts is None or sum(counts) != len(values):
        counts = [LEGACY_PER_PROCESS] * -(-len(values) // LEGACY_PER_PROCESS)
    cut, start = [], 0
    for n in counts:
        cut.append(values[start : start + n])
        start += n
    return [c for c in cut if c]


def self_checks(refs: Values, counts: Counts) -> list[SelfCheck]:
    """Every reference with two processes or more against itself, in the table's key order."""
    checks = []
    for key in sorted((k for k in refs if k[1] != "chevron"), key=_key_order):
        procs = processes(refs[key], counts.get(key))
        even, odd = [v for p in procs[0::2] for v in p], [v for p in procs[1::2] for v in p]
        if not (even and odd):
            continue
        row = floor_row(key, even, odd)  # the even half in launchbench's place
        checks.append(
            SelfCheck(
                *key,
                row.launchbench_us,
                row.reference_us,
                row.ratio,
                row.launchbench_n,
                row.reference_n,
                row.within,
            )
        )
    return checks


def decided(rows: list[LevelFidelity]) -> bool:
    """Whether every deciding row that was compared is within the tolerance."""
    return all(r.within is not False for r in rows if r.decides)


class Rounds:
    """The processes of the rounds, each logged in ``out``; a failed one is recorded and left out."""

    def __init__(self, opts: argparse.Namespace, clock: Callable[[], float] = time.monotonic):
        self.opts = opts
        self.ours: Values = {}
        self.ours_counts: Counts = {}  # each floor process's number of values, for the draw of processes
        self.refs: Values = {}
        self.ref_counts: Counts = {}  # each reference process's number of values, for the self-check
        self.together: Values = {}  # bare_layers.py python: every Python layer in one process (--together)
        self.together_counts: Counts = {}
        self.failed: list[str] = []
        self.skipped: list[str] = []  # processes not started: the --budget was spent
        self.clock = clock
        self.began = clock()

    def within_budget(self, log: Path) -> bool:
        """Whether a process may start: --budget (seconds since the rounds began; 0: none) not spent."""
        budget = self.opts.budget
        if budget and self.clock() - self.began >= budget:
            self.skipped.append(log.name)
            return False
        return True

    def _run(self, command: list[str], log: Path) -> str:
        if not self.within_budget(log):
            return ""
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as err:
            done = subprocess.CompletedProcess(command, 127, "", str(err))
        log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
        if done.returncode != 0:
            self.failed.append(f"{log.name}: exit {done.returncode}")
            print(
                f"floor_fidelity: {' '.join(command[:4])} failed (exit {done.returncode}); see {log}",
                file=sys.stderr,
            )
        return done.stdout

    def _add_reference(self, values: dict[Key, list[float]], together: bool = False) -> None:
        into, counts = (self.together, self.together_counts) if together else (self.refs, self.ref_counts)
        for key, found in values.items():
            into.setdefault(key, []).extend(found)
            counts.setdefault(key, []).append(len(found))

    def reference_commands(self, proc: int) -> dict[str, list[str]]:
        """The reference processes of one turn by log name: launch.cu, then each bare layer (the gpu
        layer's only in the first turn of a round: its GPU time per node does not move with the host).
        Each batch lasts at least --sample-time, as launchbench's samples do (from one launch up, as
        its sampler calibrates; the gpu layer's --count launches), and each process gives the medians
        of its stretches of --ref-stretch batches, as a floor process gives its stretches of samples."""
        opts = self.opts
        first = self._first_count()
        commands = {
            "launch": [
                *(opts.launch, first, str(opts.batches), "1"),
                *(str(opts.sample_time * 1e6), str(opts.ref_stretch)),
            ]
        }
        for layer in opts.layers:
            if layer == "gpu" and proc > 0:
                continue
            commands[f"bare-{layer}"] = self._bare_command(
                layer, str(opts.count) if layer == "gpu" else first
            )
        return commands

    def together_command(self) -> list[str]:
        """One `bare_layers.py python` process: every Python layer but torch, each batched and
        stretched as reference_commands has it."""
        return self._bare_command("python", self._first_count())

    def _first_count(self) -> str:
        """A reference batch's first count: one launch up where batches last --sample-time, else --count."""
        return "1" if self.opts.sample_time > 0 else str(self.opts.count)

    def _bare_command(self, layer: str, count: str) -> list[str]:
        opts = self.opts
        return [
            *(sys.executable, str(BARE), layer, "--count", count, "--batches", str(opts.batches)),
            *("--sample-time", str(opts.sample_time), "--stretch", str(opts.ref_stretch)),
        ]

    def references(self, index: int) -> None:
        """BARE turns of launch.cu and of each bare layer, one process after the other; then --together
        processes of every Python layer in one (before them in odd rounds)."""
        turns = [(False, proc) for proc in range(self.opts.bare)]
        together = [(True, proc) for proc in range(self.opts.together)]
        for one, proc in together + turns if index % 2 else turns + together:
            if one:
                log = self.opts.out / f"bare-python-r{index}-p{proc}.log"
                self._add_reference(parse_reference(self._run(self.together_command(), log)), together=True)
                continue
            for name, command in self.reference_commands(proc).items():
                log = self.opts.out / f"{name}-r{index}-p{proc}.log"
                self._add_reference(parse_reference(self._run(command, log)))

    def launchbench_turn(self, index: int) -> None:
        """One `launchbench floor` process (its values: the medians of ``--stretches`` stretches)."""
        run_dir = self.opts.out / f"floor-r{index}"
        command = [
            sys.executable,
            "-m",
            "launchbench",
            "floor",
            "-d",
            str(run_dir),
            "--max-time",
            str(self.opts.max_time),
            "--processes",
            self.opts.processes,
            "-q",
        ]
        self._run(command, self.opts.out / f"floor-r{index}.log")
        if (run_dir / "results.json").is_file():
            for key, values in launchbench_values(run_dir, self.opts.stretches).items():
                self.ours.setdefault(key, []).extend(values)
                self.ours_counts.setdefault(key, []).append(len(values))

    def all(self) -> None:
        for index in range(self.opts.rounds):
            sides = (self.launchbench_turn, self.references)
            if index % 2:
                sides = sides[::-1]
            for side in sides:
                side(index)


def _key_text(key: Key) -> str:
    return f"{key[0]}|{key[1]}|{'' if key[2] is None else key[2]}"


def _text_key(text: str) -> Key:
    layer, mode, args = text.split("|")
    return layer, mode, int(args) if args else None


def dump_values(values: Values) -> dict[str, list[float]]:
    return {_key_text(key): [round(v, 4) for v in vs] for key, vs in sorted(values.items(), key=str)}


def load_values(payload: dict[str, list[float]]) -> Values:
    return {_text_key(text): list(vs) for text, vs in payload.items()}


def load_counts(payload: dict[str, list[int]]) -> Counts:
    return {_text_key(text): list(ns) for text, ns in payload.items()}


LAYOUTS = {  # launchbench floor's --processes: how its header says it
    "layer": "each layer in a fresh process of its own, one after another",
    "shared": "every layer but torch in one process, torch in one of its own",
}


def header(ours: Values, refs: Values, processes: str) -> list[str]:
    """What was compared with what, and how."""
    floor_n = max((len(v) for v in ours.values()), default=0)
    ref_n = max((len(v) for k, v in refs.items() if k[0] != "c"), default=0)
    return [
        "# launchbench floor against standalone references",
        "",
        f"- launchbench: `launchbench floor` ({LAYOUTS[processes]}): {floor_n} values, the medians of "
        "consecutive stretches of each process's samples (the level can move within a process).",
        "- references, each in its own fresh process: the `c` layer against "
        "benchmarks/floor_reference/launch.cu built with nvcc (its cuLaunchKernel loop for eager, its "
        f"cuGraphLaunch loop for graph); each Python layer against `bare_layers.py LAYER`; {ref_n} values each, the medians of "
        "consecutive stretches of each process's batches.",
        f"- the decision, row `floor`: each side's values at its floor state (within {FLOOR_BAND:.0%} of its "
        f"lowest), the ratio of their medians, within ±{TOLERANCE:.0%} to pass (compared where each side has "
        f"at least {FLOOR_MIN} values there); the host's slower states are several, and how often a side "
        "visits them is the host's doing, not its loop's.",
        f"- beside it, levels: each side's values split where the sorted values jump by more than "
        f"{LEVEL_GAP:.0%}; each launchbench level against the reference's same level (ratio of medians); "
        "a level one side never reached: unmatched, not compared.",
        "",
        "| layer | mode | args | level | reference | launchbench µs | reference µs | ratio | n (launchbench / reference) | within ±5% |",
        "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]


def render(rows: list[LevelFidelity], ours: Values, refs: Values, processes: str) -> str:
    lines = header(ours, refs, processes)
    for r in rows:
        lines.append(
            f"| {r.layer} | {r.mode} | {'—' if r.args is None else r.args} | {r.level} | {r.reference} | "
            f"{r.launchbench_us:.3f} | {r.reference_us:.3f} | {r.ratio:.3f} | {r.launchbench_n} / {r.reference_n} | "
            f"{VERDICT[r.within]} |"
        )
    for key in sorted((k for k in refs if k[1] == "chevron"), key=lambda k: k[2] or 0):
        lines.append(
            f"| c | <<<>>> | {key[2]} | | launch.cu <<<>>> | | {statistics.median(refs[key]):.3f} | | 0 / {len(refs[key])} | |"
        )
    deciding = [r for r in rows if r.decides]
    compared = [r for r in deciding if r.within is not None]
    levels_compared = [r for r in rows if not r.decides and r.within is not None]
    lines += [
        "",
        f"{sum(bool(r.within) for r in compared)} of {len(compared)} floor rows within ±{TOLERANCE:.0%} "
        f"(the decision); {len(deciding) - len(compared)} with fewer than {FLOOR_MIN} values at a side's floor. "
        f"Outside: {sum(r.ratio > 1 for r in compared if not r.within)} with launchbench slower, "
        f"{sum(r.ratio < 1 for r in compared if not r.within)} with launchbench faster.",
        f"Levels (beside it): {sum(bool(r.within) for r in levels_compared)} of {len(levels_compared)} "
        f"compared level rows within ±{TOLERANCE:.0%}; "
        f"{sum(r.level == 'unmatched' for r in rows)} unmatched levels.",
    ]
    return "\n".join(lines)


def render_self_checks(checks: list[SelfCheck], rows: list[LevelFidelity]) -> str:
    """The references against themselves, and the floor rows where each reproduced itself and where not."""
    lines = [
        "",
        "## Each reference against itself",
        "",
        "Its even-numbered processes against its odd-numbered ones, at the floor rule above. Where a "
        f"reference does not reproduce itself within ±{TOLERANCE:.0%}, a ±{TOLERANCE:.0%} row against it "
        "cannot tell launchbench from the host.",
        "",
        "| layer | mode | args | even µs | odd µs | ratio | n (even / odd) | within ±5% |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in checks:
        lines.append(
            f"| {c.layer} | {c.mode} | {'—' if c.args is None else c.args} | {c.even_us:.3f} | {c.odd_us:.3f} | "
            f"{c.ratio:.3f} | {c.even_n} / {c.odd_n} | {VERDICT[c.within]} |"
        )
    itself = {(c.layer, c.mode, c.args): c.within for c in checks}
    floor = [r for r in rows if r.decides and r.within is not None]
    steady = [r for r in floor if itself.get((r.layer, r.mode, r.args)) is True]
    unsteady = [r for r in floor if itself.get((r.layer, r.mode, r.args)) is False]
    lines += [
        "",
        f"{sum(c.within is True for c in checks)} of {sum(c.within is not None for c in checks)} references "
        f"within ±{TOLERANCE:.0%} of themselves. Floor rows where the reference was: "
        f"{sum(bool(r.within) for r in steady)} of {len(steady)} within; where it was not: "
        f"{sum(bool(r.within) for r in unsteady)} of {len(unsteady)}.",
    ]
    return "\n".join(lines)


def render_together(ours: Values, together: Values, refs: Values) -> str:
    """launchbench against every Python layer in one process, and that process against one per layer,
    each row by the floor rule (--together)."""
    n = max((len(v) for v in together.values()), default=0)
    lines = [
        "",
        "## The Python layers in one process",
        "",
        f"`bare_layers.py python`: every Python layer but torch in one process, one after the other ({n} "
        "values each). Each row by the floor rule above, twice: launchbench against the one process, and "
        "the one process against one process per layer.",
        "",
        "| layer | mode | args | launchbench / one process | n | within ±5% | one process / per layer | n | within ±5% |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    pairs = []
    for key in sorted(together, key=_key_order):
        ours_row = floor_row(key, ours.get(key, []), together[key]) if ours.get(key) else None
        refs_row = floor_row(key, together[key], refs.get(key, [])) if refs.get(key) else None
        pairs.append((ours_row, refs_row))
        cells = [
            "| | not compared"
            if row is None
            else f"{row.ratio:.3f} | {row.launchbench_n} / {row.reference_n} | {VERDICT[row.within]}"
            for row in (ours_row, refs_row)
        ]
        lines.append(
            f"| {key[0]} | {key[1]} | {'—' if key[2] is None else key[2]} | {cells[0]} | {cells[1]} |"
        )
    lines += ["", _together_summary(pairs)]
    return "\n".join(lines)


def _together_summary(pairs: list[tuple[LevelFidelity | None, LevelFidelity | None]]) -> str:
    decided_pairs = [(a, b) for a, b in pairs if a and b and a.within is not None and b.within is not None]
    alike = sum(bool(a.within) for a, _ in decided_pairs)
    apart = sum(not b.within for _, b in decided_pairs)
    both = sum(bool(a.within) and not b.within for a, b in decided_pairs)
    return (
        f"{len(decided_pairs)} rows decided both ways: launchbench within ±{TOLERANCE:.0%} of the one process "
        f"on {alike}; the one process outside ±{TOLERANCE:.0%} of one process per layer on {apart}; both at "
        f"once (the process's shape, not launchbench's loop) on {both}."
    )


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", help="the built launch.cu program")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bare", type=int, default=3, help="processes of each reference per round")
    parser.add_argument(
        "--together", type=int, default=0, help="processes of every Python layer in one per round (0: none)"
    )
    parser.add_argument("--max-time", type=float, default=6.0, help="launchbench floor's budget per round")
    parser.add_argument(
        "--processes",
        choices=sorted(LAYOUTS),
        default="layer",
        help="launchbench floor's --processes: a process per layer, or every layer but torch in one",
    )
    parser.add_argument(
        "--stretches",
        type=int,
        default=8,
        help="values per floor process: its samples' stretches (at least 5 samples each: a sampler round)",
    )
    parser.add_argument(
        "--count",
        type=int,
        default=1000,
        help="the gpu reference's launches per batch (all: with --sample-time 0)",
    )
    parser.add_argument("--batches", type=int, default=7, help="the references' batches per process")
    parser.add_argument(
        "--ref-stretch",
        type=int,
        default=5,
        help="a reference's values: the medians of its stretches of this many batches (a sampler round's 5)",
    )
    parser.add_argument(
        "--sample-time", type=float, default=SAMPLE_TIME, help="seconds a reference's batch lasts at least"
    )
    parser.add_argument("--layers", type=lambda t: t.split(","), default=list(BARE_LAYERS))
    parser.add_argument("--out", type=Path, default=Path("results/floor-fidelity"))
    parser.add_argument(
        "--budget", type=float, default=0.0, help="seconds: start no process after them (0: no limit)"
    )
    parser.add_argument("--reanalyse", action="store_true", help="only the table, from OUT/fidelity.json")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="only the table, from these runs' fidelity.json together, into OUT",
    )
    opts = parser.parse_args()
    if not (opts.reanalyse or opts.merge) and not opts.launch:
        parser.error("--launch is required (the built launch.cu), unless --reanalyse or --merge")
    return opts


@dataclass
class Recorded:
    """What a fidelity run found: this run's rounds, a fidelity.json's, or several merged."""

    ours: Values
    refs: Values
    counts: Counts
    together: Values
    together_counts: Counts
    failed: list[str]
    skipped: list[str]
    processes: str  # launchbench floor's --processes
    seconds: float | None
    ours_counts: Counts = field(default_factory=dict)  # per floor process; absent keys: not known


def _recorded_seconds(out: Path, payload: dict[str, object]) -> float | None:
    """A recorded run's seconds: its fidelity.json's, else the last "(N s" line of its fidelity.md."""
    if payload.get("seconds") is not None:
        return float(payload["seconds"])  # type: ignore[arg-type]
    table = out / "fidelity.md"
    found = re.findall(r"^\(.*?(\d+) s[;)]", table.read_text(), flags=re.M) if table.is_file() else []
    return float(found[-1]) if found else None


def recorded(out: Path) -> Recorded:
    """The run recorded in ``out``/fidelity.json (the runs before --processes shared one process)."""
    payload = json.loads((out / "fidelity.json").read_text())
    return Recorded(
        load_values(payload["launchbench"]),
        load_values(payload["references"]),
        load_counts(payload.get("reference_counts", {})),
        load_values(payload.get("together", {})),
        load_counts(payload.get("together_counts", {})),
        payload["failed"],
        payload.get("skipped", []),
        payload.get("processes", "shared"),
        _recorded_seconds(out, payload),
        _ours_counts(out, payload),
    )


def _ours_counts(out: Path, payload: dict[str, object]) -> Counts:
    """Each floor process's number of values: fidelity.json's, else recovered from the floor runs in
    fidelity-logs.tar.gz (runs recorded before the counts were kept) at the device script's --stretches 8."""
    if "launchbench_counts" in payload:
        return load_counts(payload["launchbench_counts"])  # type: ignore[arg-type]
    ours = load_values(payload["launchbench"])  # type: ignore[arg-type]
    return _floor_draw.counts_from_logs(out, ours, lambda run_dir: launchbench_values(run_dir, 8))


def _joined(parts: list[Values]) -> Values:
    out: Values = {}
    for part in parts:
        for key, values in part.items():
            out.setdefault(key, []).extend(values)
    return out


def _joined_counts(parts: list[tuple[Values, Counts]]) -> Counts:
    """Each key's process counts, one run after another (a run without them: LEGACY_PER_PROCESS each)."""
    out: Counts = {}
    for values, counts in parts:
        for key, found in values.items():
            given = counts.get(key)
            if given is None or sum(given) != len(found):
                given = [len(c) for c in processes(found, None)]
            out.setdefault(key, []).extend(given)
    return out


def merged(runs: list[Recorded]) -> Recorded:
    """Several runs as one: every key's values and its processes' counts, one run after another, so the
    floor rule and the self-check see all their processes; refused where the runs' layouts differ."""
    layouts = sorted({run.processes for run in runs})
    if len(layouts) > 1:
        raise SystemExit(
            f"--merge: the runs measured launchbench floor in different layouts: {', '.join(layouts)}"
        )
    seconds = [run.seconds for run in runs]
    return Recorded(
        _joined([run.ours for run in runs]),
        _joined([run.refs for run in runs]),
        _joined_counts([(run.refs, run.counts) for run in runs]),
        _joined([run.together for run in runs]),
        _joined_counts([(run.together, run.together_counts) for run in runs]),
        [f for run in runs for f in run.failed],
        [s for run in runs for s in run.skipped],
        layouts[0],
        None if None in seconds else sum(s for s in seconds if s is not None),
        _merged_ours_counts(runs),
    )


def _merged_ours_counts(runs: list[Recorded]) -> Counts:
    """The floor processes' counts, one run after another, for the keys every run that has them knows."""
    keys = set().union(*(run.ours for run in runs))
    known = [k for k in keys if all(k in run.ours_counts or k not in run.ours for run in runs)]
    return {k: [n for run in runs for n in run.ours_counts.get(k, [])] for k in known}


def measured(opts: argparse.Namespace) -> Recorded:
    """This run's rounds, into ``opts.out``."""
    started = time.time()
    opts.out.mkdir(parents=True, exist_ok=True)
    rounds = Rounds(opts)
    rounds.all()
    return Recorded(
        rounds.ours,
        rounds.refs,
        rounds.ref_counts,
        rounds.together,
        rounds.together_counts,
        rounds.failed,
        rounds.skipped,
        opts.processes,
        time.time() - started,
        rounds.ours_counts,
    )


def _closing(seconds: float | None, rebuilt: str | None) -> str:
    took = [] if seconds is None else [f"{seconds:.0f} s"]
    return "(" + "; ".join([*took, *([rebuilt] if rebuilt else [])]) + ")"


def _counts_text(counts: Counts) -> dict[str, list[int]]:
    return {_key_text(key): n for key, n in sorted(counts.items(), key=str)}


def _skipped_text(logs: list[str]) -> str:
    """The processes not started, counted by kind (``floor``, ``launch``, ``bare-cupy_raw``: a log's name
    less its round and process), in the order first met; fidelity.json keeps every name."""
    kinds = Counter(re.sub(r"-r\d+(-p\d+)?\.log$", "", log) for log in logs)
    return ", ".join(f"{kind} ×{n}" for kind, n in kinds.items())


def _draws(rows: list[LevelFidelity], run: Recorded) -> list[_floor_draw.Draw]:
    """The floor rows under resampled processes (benchmarks/_floor_draw.py)."""
    keys = [(r.layer, r.mode, r.args) for r in rows if r.decides]
    return _floor_draw.draws(
        keys,
        run.ours,
        run.ours_counts,
        lambda key: processes(run.refs[key], run.counts.get(key)),
        lambda mine, refs: floor_row(("", "", None), mine, refs).ratio,
        TOLERANCE,
    )


def report(run: Recorded, out: Path, rebuilt: str | None) -> int:
    """Write ``out``/fidelity.md (printed too) and fidelity.json; the exit status."""
    rows = fidelity(run.ours, run.refs)
    checks = self_checks(run.refs, run.counts)
    text = render(rows, run.ours, run.refs, run.processes) + "\n" + render_self_checks(checks, rows)
    if run.together:
        text += "\n" + render_together(run.ours, run.together, run.refs)
    draws = _draws(rows, run)
    if draws:
        text += "\n" + _floor_draw.render(draws, TOLERANCE)
    if run.skipped:
        text += (
            f"\n{len(run.skipped)} processes not started, the --budget spent: {_skipped_text(run.skipped)}."
        )
    text += "\n\n" + _closing(run.seconds, rebuilt)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fidelity.md").write_text(text + "\n")
    payload = {
        "processes": run.processes,
        "launchbench": dump_values(run.ours),
        "references": dump_values(run.refs),
        "seconds": None if run.seconds is None else round(run.seconds),
        "reference_counts": _counts_text(run.counts),
        "launchbench_counts": _counts_text(run.ours_counts),
        "rows": [asdict(r) for r in rows],
        "self_check": [asdict(c) for c in checks],
        "together": dump_values(run.together),
        "together_counts": _counts_text(run.together_counts),
        "failed": run.failed,
        "skipped": run.skipped,
        "draws": [asdict(d) for d in draws],
    }
    (out / "fidelity.json").write_text(json.dumps(payload, indent=1) + "\n")
    if run.failed:
        print("failed: " + "; ".join(run.failed), file=sys.stderr)
        return 2
    return 0 if decided(rows) else 1


def main() -> None:
    opts = options()
    if opts.merge:
        rebuilt = f"merged from {len(opts.merge)} runs: {', '.join(str(d) for d in opts.merge)}"
        sys.exit(report(merged([recorded(d) for d in opts.merge]), opts.out, rebuilt))
    if opts.reanalyse:
        sys.exit(report(recorded(opts.out), opts.out, "the table rebuilt from fidelity.json"))
    sys.exit(report(measured(opts), opts.out, None))


if __name__ == "__main__":
    main()
