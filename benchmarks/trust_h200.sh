#!/usr/bin/env bash
# The trust evidence of issues #3 and #4 in one go, on a machine with an NVIDIA GPU:
# two back-to-back quickstart runs (A/A), a run whose chains are 10% longer, the A/A rule, compare and its
# gate on both pairs, and the fidelity script. Everything lands under OUT (default results/trust).
# Exits 1 when any piece of evidence fails (a run, the A/A rule, the A/A gate passing, the longer-chain
# gate failing, fidelity), after running all of them.
#
#     bash benchmarks/trust_h200.sh [OUT]
set -uo pipefail
out=${1:-results/trust}
failed=()
mkdir -p "$out/compare" "$out/aa"
lb() { python3 -m launchbench "$@"; }
for name in a b; do
  start=$(date +%s.%N)
  lb run scenarios/quickstart.yaml --quiet --out-dir "$out/quickstart-$name"
  status=$?
  [ "$status" -eq 0 ] || failed+=("quickstart-$name run")
  echo "quickstart-$name: exit $status, $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s wall" | tee -a "$out/wall_time.txt"
done
lb run tests/data/gpu/quickstart_longer.yaml --quiet --out-dir "$out/quickstart-longer" || failed+=("quickstart-longer run")
python3 benchmarks/aa_check.py "$out/quickstart-a" "$out/quickstart-b" --out "$out/aa/aa_check.txt" | tail -1 || failed+=("A/A rule")
lb compare "$out/quickstart-a" "$out/quickstart-b" --format markdown --output "$out/compare/quickstart-a-vs-b.md" \
  --gate-rows gpu-bound --fail-on wall_us_per_iter:8%
status=$?
[ "$status" -eq 0 ] || failed+=("A/A gate (exit $status, expected 0)")
echo "compare a b gate: exit $status" | tee "$out/compare/gates.txt"
lb compare "$out/quickstart-a" "$out/quickstart-b" --format json --output "$out/compare/quickstart-a-vs-b.json"
lb compare "$out/quickstart-a" "$out/quickstart-longer" --format markdown --output "$out/compare/quickstart-vs-longer.md" \
  --gate-rows gpu-bound --fail-on wall_us_per_iter:8%
status=$?
[ "$status" -eq 1 ] || failed+=("longer-chain gate (exit $status, expected 1)")
echo "compare a longer gate: exit $status" | tee -a "$out/compare/gates.txt"
lb compare "$out/quickstart-a" "$out/quickstart-longer" --format json --output "$out/compare/quickstart-vs-longer.json"
PYTHONPATH=${PYTHONPATH:-}:$PWD python3 benchmarks/fidelity.py --out "$out/fidelity" | tail -20 || failed+=("fidelity")
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'trust evidence failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "trust evidence: all of it holds"
