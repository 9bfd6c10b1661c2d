#!/usr/bin/env bash
# The canary's own evidence, on a machine with an NVIDIA GPU: a scratch copy of launchbench with the
# graph-replay slowdown put back on purpose (backend/graph.py's _retire no longer launches an uploaded exec
# before destroying it), its quickstart run (short budget) and the canary per case-pass it recorded, then the
# same for this checkout, then tests/backend/test_fidelity_gpu.py on each copy. Writes OUT/contaminated/, OUT/clean/,
# their logs and OUT/canary_demo.txt.
#
#     bash benchmarks/canary_demo.sh OUT [RUN OPTIONS...]
set -uo pipefail
out=$(realpath -m "$1"); shift
repo=$(pwd)
scratch=$(mktemp -d)
cp -r launchbench tests benchmarks scenarios pyproject.toml "$scratch/"
sed -i 's/if int(cudart.cudaGraphLaunch(graph_exec, stream.ptr)\[0\]) == 0:/if False:  # contamination put back/' \
  "$scratch/launchbench/backend/graph.py"
grep -q "contamination put back" "$scratch/launchbench/backend/graph.py" || { echo "the scratch edit did not apply"; exit 2; }
mkdir -p "$out"
for side in contaminated clean; do
  root=$repo; [ "$side" = contaminated ] && root=$scratch
  (cd "$root" && PYTHONPATH="$root:${PYTHONPATH:-}" python3 -m launchbench run "$repo/scenarios/quickstart.yaml" \
     -d "$out/$side" "$@" > "$out/$side.log" 2>&1)
  echo "$side: launchbench run exit $?" >> "$out/canary_demo.txt"
  python3 - "$out/$side" >> "$out/canary_demo.txt" <<'PY'
import json, sys
run = json.load(open(f"{sys.argv[1]}/results.json"))
for case in run["cases"]:
    for number, one in enumerate(case["modes"]["graph"]["passes"]):
        c = one.get("canary")
        if c:
            print(f"  {case['case_id']:<18} pass {number}: graph {c['before']['graph_s_per_node']*1e6:.3f} -> "
                  f"{c['after']['graph_s_per_node']*1e6:.3f} us/node (start {c['start']['graph_s_per_node']*1e6:.3f}), "
                  f"disturbed {c['disturbed']}")
PY
done
for side in contaminated clean; do  # the short GPU fidelity test, on each copy
  root=$repo; [ "$side" = contaminated ] && root=$scratch
  (cd "$root" && PYTHONPATH="$root:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider tests/backend/test_fidelity_gpu.py \
     > "$out/$side-fidelity-test.log" 2>&1)
  echo "$side: GPU fidelity test exit $? ($(tail -n 1 "$out/$side-fidelity-test.log"))" >> "$out/canary_demo.txt"
done
rm -rf "$scratch"
cat "$out/canary_demo.txt"
