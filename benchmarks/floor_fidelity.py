"""launchbench floor against standalone references, each in its own fresh process, alternated in rounds:
the C layer against benchmarks/floor_reference/launch.cu (built with nvcc; cuLaunchKernel and
cuGraphLaunch, with <<<>>> beside them), each Python layer against its bare loop in
benchmarks/floor_reference/bare_layers.py (which imports nothing of launchbench).

Per layer, mode and argument count it prints launchbench's median over rounds, the reference's, their
ratio (target: within ±5%), the ratio of the lowest round of each (an eager launch sits at one of two
host levels per process, so two medians of few rounds can mix levels) and every round's own ratio;
fidelity.json holds it all. A process that fails is logged and left out of its round. Exit 1 when a
ratio of medians is outside ±5%, 2 when a process failed.

    python benchmarks/floor_fidelity.py --launch BUILD/launch [--rounds 3] [--max-time 12] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from launchbench.report.floor import floor_rows
from launchbench.results.store import load_run

HERE = Path(__file__).resolve().parent
BARE = HERE / "floor_reference" / "bare_layers.py"
BARE_LAYERS = ("bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu")
C_METHODS = {"cuLaunchKernel": "eager", "cuGraphLaunch": "graph", "triple_chevron": "chevron"}
TOLERANCE = 0.05
Key = tuple[str, str, int | None]  # layer, mode, argument count


@dataclass(frozen=True)
class LayerFidelity:
    layer: str
    mode: str
    args: int | None
    launchbench_us: float
    reference_us: float
    ratio: float
    ratio_of_lowest: float
    round_ratios: list[float]

    @property
    def within(self) -> bool:
        return abs(self.ratio - 1.0) <= TOLERANCE


def parse_reference(text: str) -> dict[Key, float]:
    """The JSON lines of launch.cu or bare_layers.py as {(layer, mode, args): µs per launch}."""
    values: dict[Key, float] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        mode = C_METHODS[item["method"]] if "method" in item else item["mode"]
        values[(item["layer"], mode, item.get("args"))] = float(item["us_per_launch"])
    return values


def launchbench_values(run_dir: Path) -> dict[Key, float]:
    """A floor run's µs per launch by layer, mode and argument count (the gpu layer: GPU time per node)."""
    values: dict[Key, float] = {}
    for row in floor_rows(load_run(run_dir)):
        if row.layer == "gpu":
            if row.gpu_node_s is not None:
                values[("gpu", "graph", None)] = row.gpu_node_s * 1e6
            continue
        for mode, value in (("eager", row.eager_s), ("graph", row.graph_s)):
            if value is not None:
                values[(row.layer, mode, row.args)] = value * 1e6
    return values


def fidelity(ours: list[dict[Key, float]], refs: list[dict[Key, float]]) -> list[LayerFidelity]:
    """One row per key that both sides measured (in the rounds where each did)."""
    keys = sorted(set().union(*ours) & set().union(*refs), key=str)
    rows = []
    for key in keys:
        mine = [o[key] for o in ours if key in o]
        theirs = [r[key] for r in refs if key in r]
        paired = [(o[key], r[key]) for o, r in zip(ours, refs, strict=True) if key in o and key in r]
        rows.append(
            LayerFidelity(
                *key,
                launchbench_us=statistics.median(mine),
                reference_us=statistics.median(theirs),
                ratio=statistics.median(mine) / statistics.median(theirs),
                ratio_of_lowest=min(mine) / min(theirs),
                round_ratios=[round(a / b, 4) for a, b in paired],
            )
        )
    return rows


FAILED: list[str] = []  # the processes that failed (their logs name why); the rounds go on without them


def _run(command: list[str], log: Path) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as err:
        done = subprocess.CompletedProcess(command, 127, "", str(err))
    log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    if done.returncode != 0:
        FAILED.append(f"{log.name}: exit {done.returncode}")
        print(
            f"floor_fidelity: {' '.join(command[:4])} failed (exit {done.returncode}); see {log}",
            file=sys.stderr,
        )
    return done.stdout


def references(opts: argparse.Namespace, out: Path, index: int) -> dict[Key, float]:
    values = parse_reference(
        _run([opts.launch, str(opts.count), str(opts.batches), "1"], out / f"launch-r{index}.log")
    )
    for layer in opts.layers:
        command = [
            sys.executable,
            str(BARE),
            layer,
            "--count",
            str(opts.count),
            "--batches",
            str(opts.batches),
        ]
        values.update(parse_reference(_run(command, out / f"bare-{layer}-r{index}.log")))
    return values


def ours(opts: argparse.Namespace, out: Path, index: int) -> dict[Key, float]:
    run_dir = out / f"floor-r{index}"
    command = [
        sys.executable,
        "-m",
        "launchbench",
        "floor",
        "-d",
        str(run_dir),
        "--max-time",
        str(opts.max_time),
        "-q",
    ]
    _run(command, out / f"floor-r{index}.log")
    return launchbench_values(run_dir) if (run_dir / "results.json").is_file() else {}


def render(rows: list[LayerFidelity], chevron: dict[int | None, float]) -> str:
    lines = [
        "| layer | mode | args | launchbench µs | reference µs | ratio | ratio of lowest | rounds | within ±5% |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        rounds = " ".join(f"{x:.3f}" for x in r.round_ratios)
        lines.append(
            f"| {r.layer} | {r.mode} | {'—' if r.args is None else r.args} | {r.launchbench_us:.3f} | "
            f"{r.reference_us:.3f} | {r.ratio:.3f} | {r.ratio_of_lowest:.3f} | {rounds} | {'yes' if r.within else 'NO'} |"
        )
    for args, us in sorted(chevron.items(), key=lambda item: item[0] or 0):
        lines.append(f"| c (<<<>>> in launch.cu) | eager | {args} | | {us:.3f} | | | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", required=True, help="the built launch.cu program")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-time", type=float, default=12.0, help="launchbench floor's budget per round")
    parser.add_argument("--count", type=int, default=10000, help="the references' iterations per batch")
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--layers", type=lambda t: t.split(","), default=list(BARE_LAYERS))
    parser.add_argument("--out", type=Path, default=Path("results/floor-fidelity"))
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    mine: list[dict[Key, float]] = []
    theirs: list[dict[Key, float]] = []
    for index in range(opts.rounds):
        order = (ours, references) if index % 2 == 0 else (references, ours)
        for side in order:
            (mine if side is ours else theirs).append(side(opts, opts.out, index))
    rows = fidelity(mine, theirs)
    chevron_keys = {k for t in theirs for k in t if k[1] == "chevron"}
    chevron = {k[2]: statistics.median(t[k] for t in theirs if k in t) for k in chevron_keys}
    text = render(rows, chevron)
    print(text)
    (opts.out / "fidelity.md").write_text(text + "\n")
    payload = {
        "rows": [asdict(r) | {"within": r.within} for r in rows],
        "chevron_us": {str(k): v for k, v in chevron.items()},
        "failed": FAILED,
    }
    (opts.out / "fidelity.json").write_text(json.dumps(payload, indent=1))
    if FAILED:
        print("failed: " + "; ".join(FAILED), file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if all(r.within for r in rows) else 1)


if __name__ == "__main__":
    main()
