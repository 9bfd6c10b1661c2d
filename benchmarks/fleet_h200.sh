#!/usr/bin/env bash
# The fleet on one GPU: `run --devices all` (one device here) and a 2-shard run merged measure the same
# rows as a plain run of the quickstart, with figures within noise (the A/A rule of aa_check.py against
# the plain run). Everything lands under OUT (default results/fleet-h200): the runs, case_sets.txt,
# the A/A tables and compare's markdown. Exits 1 when a run fails or the case sets differ, after
# running every piece.
#
#     bash benchmarks/fleet_h200.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/fleet-h200}
scenario=scenarios/quickstart.yaml
failed=()
mkdir -p "$out"
lb() { python3 -m launchbench "$@"; }
timed() {  # NAME COMMAND...: run it, note its exit code and wall time in wall_time.txt
  local name=$1 start status
  shift
  start=$(date +%s.%N)
  "$@"
  status=$?
  [ "$status" -eq 0 ] || failed+=("$name (exit $status)")
  echo "$name: exit $status, $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s wall" | tee -a "$out/wall_time.txt"
}
timed plain lb run "$scenario" --quiet -d "$out/plain"
timed devices lb run "$scenario" --devices all --quiet -d "$out/devices"
timed shard-0 lb run "$scenario" --shard 0/2 --quiet -d "$out/shard-0"
timed shard-1 lb run "$scenario" --shard 1/2 --quiet -d "$out/shard-1"
timed merge lb merge "$out/shard-0" "$out/shard-1" -d "$out/merged"
python3 benchmarks/fleet_case_sets.py "$out/plain" "$out/devices" "$out/merged" --out "$out/case_sets.txt" \
  || failed+=("case sets")
for other in devices merged; do
  python3 benchmarks/aa_check.py "$out/plain" "$out/$other" --out "$out/aa-plain-vs-$other.txt" | tail -1
  lb compare "$out/plain" "$out/$other" --format markdown -o "$out/compare-plain-vs-$other.md"
done
lb env --json > "$out/env.json"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi
echo "all pieces ran; case sets equal (see $out/case_sets.txt)"
