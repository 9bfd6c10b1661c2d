#!/usr/bin/env bash
# compare on the committed H200 runs, no GPU needed: two pairs of separate runs of the same code (A/A)
# and two pairs whose current run has every chain 10% longer (same case ids), each gated with
# --fail-on wall_us_per_iter:5%. Writes the markdown reports and the gates' exit codes to OUT.
#
#     bash benchmarks/compare_committed.sh [OUT]        # default results/compare
set -uo pipefail
out=${1:-results/compare}
mkdir -p "$out"
: >"$out/gates.txt"
pair() {  # NAME BASELINE CURRENT
  python3 -m launchbench compare "$2" "$3" --fail-on wall_us_per_iter:5% --format markdown -o "$out/$1.md" -q
  echo "$1: compare $2 $3 --fail-on wall_us_per_iter:5%: exit $?" | tee -a "$out/gates.txt"
}
pair quickstart-a-vs-b results/quickstart-h200 results/quickstart-h200-b
pair quickstart-vs-longer results/quickstart-h200 results/quickstart-h200-longer
pair separate-base-vs-base-2 results/separate-h200/base results/separate-h200/base-2
pair separate-base-vs-longer results/separate-h200/base results/separate-h200/longer
