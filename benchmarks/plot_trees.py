"""`launchbench plot` of the committed benchmark runs by an older tree and by this one, alternating, each
invocation a fresh process, with every figure checked to be the same bytes on both sides:

    python benchmarks/plot_trees.py OLD_TREE [--pairs 3] [--out FILE.json]

OLD_TREE is a folder holding an older ``launchbench`` package (``git archive COMMIT launchbench | tar -x
-C OLD_TREE``). Each round plots, one command each: the H200 quickstart and its rerun together (two runs
and their comparison), then shape-changes-h200, floor-h200, library-h200, graph-features-h200 (as SVG)
and tiny-kernels-h200 from results/, at the default 200 dpi. A round's CPU is the user and system seconds
of its commands and of the processes they waited for (the figures' forked processes among them), from
os.wait4's rusage. Prints one line a round and writes each round's wall and CPU seconds, their medians,
whether every file agreed, the machine, the versions and the load average before and after to --out.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _report import alternate, library_versions, old_tree_parser, timed_process
from speed_compare import machine

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "results"
PLOTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (  # (runs, options)
    (("quickstart-h200", "quickstart-h200-b"), ()),
    (("shape-changes-h200",), ()),
    (("floor-h200",), ()),
    (("library-h200",), ()),
    (("graph-features-h200",), ("--format", "svg")),
    (("tiny-kernels-h200",), ()),
)


def one_round(tree: Path, folder: Path) -> tuple[dict[str, float], dict[str, str]]:
    """Every plot of PLOTS by ``tree``: the round's wall and CPU seconds, and each file's SHA-256."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    wall = cpu = 0.0
    for index, (runs, options) in enumerate(PLOTS):
        out = ["--out", str(folder / str(index)), "-q"]
        command = [
            sys.executable,
            "-m",
            "launchbench",
            "plot",
            *(str(RUNS / r) for r in runs),
            *options,
            *out,
        ]
        begin = time.perf_counter()
        timing, _ = timed_process(command, env, folder)
        if timing.code != 0:
            raise SystemExit(f"{tree}: plot {runs[0]} exited {timing.code}")
        wall += time.perf_counter() - begin
        cpu += timing.user_s + timing.system_s
    hashes = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
              for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip
    return {"wall_s": wall, "cpu_s": cpu}, hashes


def main() -> None:
    args = old_tree_parser(__doc__, pairs=3).parse_args()
    load_before = os.getloadavg()[0]
    files: dict[str, dict[str, str]] = {}

    def measure(name: str, tree: Path) -> dict[str, float]:
        timing, files[name] = one_round(tree, Path(tempfile.mkdtemp(dir=work)))
        return timing

    with tempfile.TemporaryDirectory() as work:
        rounds, medians = alternate({"old": args.old.resolve(), "new": ROOT}, args.pairs, measure)
    same = files["old"] == files["new"]
    print(
        f"{len(files['new'])} files, {'every one the same bytes' if same else 'NOT the same bytes'} on both sides"
    )
    if args.out:
        document = {
            "old_tree": str(args.old), "plots": PLOTS, "rounds": rounds, "medians": medians,
            "files": len(files["new"]), "same_bytes": same, "machine": machine(),
            "versions": library_versions(("matplotlib", "numpy", "pandas")),
            "load_1m": [load_before, os.getloadavg()[0]],
        }  # fmt: skip
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
