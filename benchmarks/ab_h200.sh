#!/usr/bin/env bash
# The evidence for launchbench ab and the row-level statistics (docs/ab.md), on a machine with an NVIDIA
# GPU, in one go: the ab GPU tests; three ab A/A invocations on the quickstart; one ab whose variant B
# adds host work per launch in a python step (examples/ab/pr); separate runs base, chains 10% longer,
# base again, with compare. Everything lands under OUT; wall times in OUT/wall_time.txt.
#
#     [STEPS="gpu aa regression separate"] [AA=3] bash benchmarks/ab_h200.sh [OUT] [AB_OPTIONS...]
#
# AB_OPTIONS go to the AA A/A invocations (e.g. --max-time 2 to halve their time, --cpu none to leave
# the workers unpinned); STEPS chooses the parts.
set -uo pipefail
out=${1:-results/ab-h200}
shift || true
aa_options=("$@")
steps=${STEPS:-gpu aa regression separate}
has() { [[ " $steps " == *" $1 "* ]]; }
mkdir -p "$out"
lb() { python3 -m launchbench "$@"; }
timed() {  # NAME COMMAND...: run, log the exit code and the wall time
  local name=$1 start status
  shift
  start=$(date +%s.%N)
  "$@" >"$out/$name.txt" 2>&1
  status=$?
  echo "$name: exit $status, $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s wall" | tee -a "$out/wall_time.txt"
}
has gpu && timed gpu-tests python3 -m pytest -m gpu -q -p no:cacheprovider tests/run/test_ab_gpu.py
python3 - >"$out/host_cost.txt" <<'PY'
import timeit
import numpy as np
x = np.ones(1000, dtype=np.float32)
alpha = x.dtype.type(1.0)
cost = min(timeit.repeat(lambda: np.result_type(x.dtype, alpha) != x.dtype, number=100_000, repeat=5)) / 100_000
print(f"examples/ab/pr extra host work per launch (np.result_type(x.dtype, alpha) != x.dtype): {cost * 1e9:.0f} ns")
import cupy as cp
y = cp.ones(1000, dtype=cp.float32)
a = y.dtype.type(1.0)
def launches():
    for _ in range(500):
        cp.multiply(y, a, out=y)
    cp.cuda.get_current_stream().synchronize()
launch = min(timeit.repeat(launches, number=1, repeat=50)) / 500
print(f"examples/ab/base eager launch (cp.multiply(x, alpha, out=x), 1000 floats), fastest of 50 x 500: {launch * 1e9:.0f} ns")
PY
has aa && for n in $(seq 1 "${AA:-3}"); do
  timed "aa-$n" lb ab scenarios/quickstart.yaml --quiet --out "$out/aa-$n" "${aa_options[@]}" \
    --gate-rows host-bound --fail-on wall_us_per_launch:5% --format markdown -o "$out/aa-$n-gate.md" --junit "$out/aa-$n-junit.xml"
done
has regression && timed regression lb ab scenarios/ab_launch.yaml --a path=examples/ab/base --b path=examples/ab/pr --quiet \
  --out "$out/regression" --gate-rows host-bound --fail-on wall_us_per_launch:5% --format markdown -o "$out/regression-gate.md" \
  --junit "$out/regression-junit.xml"
if has separate; then
timed run-base lb run scenarios/quickstart.yaml --quiet --out "$out/separate/base"
timed run-longer lb run tests/data/gpu/quickstart_longer.yaml --quiet --out "$out/separate/longer"
timed run-base-2 lb run scenarios/quickstart.yaml --quiet --out "$out/separate/base-2"
timed compare-aa lb compare "$out/separate/base" "$out/separate/base-2" --gate-rows gpu-bound --fail-on wall_us_per_iter:8% \
  --format markdown -o "$out/separate/base-vs-base-2.md"
timed compare-longer lb compare "$out/separate/base" "$out/separate/longer" --gate-rows gpu-bound --fail-on wall_us_per_iter:8% \
  --format markdown -o "$out/separate/base-vs-longer.md"
fi
cat "$out/wall_time.txt"
