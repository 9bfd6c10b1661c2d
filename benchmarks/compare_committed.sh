#!/usr/bin/env bash
# compare on the committed H200 runs, no GPU needed: two pairs of separate runs of the same code (A/A)
# and two pairs whose current run has every chain 10% longer (same case ids), each gated with
# --gate-rows gpu-bound --fail-on wall_us_per_iter:8% (separate runs see 8% on the GPU-bound rows; the
# host-bound rows are ab's). Writes the markdown reports and the gates' outcomes to OUT.
#
#     bash benchmarks/compare_committed.sh [OUT]        # default results/compare
set -uo pipefail
out=${1:-results/compare}
mkdir -p "$out"
: >"$out/gates.txt"
pair() {  # NAME BASELINE CURRENT
  outcome=$(python3 -m launchbench compare "$2" "$3" --gate-rows gpu-bound --fail-on wall_us_per_iter:8% \
    --format markdown -o "$out/$1.md" -q)
  status=$?
  echo "$1: compare $2 $3 --gate-rows gpu-bound --fail-on wall_us_per_iter:8%: exit $status: $outcome" | tee -a "$out/gates.txt"
}
pair quickstart-a-vs-b results/quickstart-h200 results/quickstart-h200-b
pair quickstart-vs-longer results/quickstart-h200 results/quickstart-h200-longer
pair separate-base-vs-base-2 results/separate-h200/base results/separate-h200/base-2
pair separate-base-vs-longer results/separate-h200/base results/separate-h200/longer
