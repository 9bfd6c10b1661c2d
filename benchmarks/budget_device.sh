#!/usr/bin/env bash
# The quickstart's time budget against its precision, on one GPU machine in one go (about 6 minutes):
#   1. the issue's starting tree (OLD, default .devrun/old) at its defaults against this tree with
#      --max-time ${BUDGET_A:-2}, alternating, 3 runs each (benchmarks/speed_quickstart.py);
#   2. this tree at --max-time $BUDGET_A against this tree at --max-time ${BUDGET_B:-1.5}, alternating, 3 each.
# Every run's wall time, peak memory and each row's CI width land in one tarball under OUT (default $OUT):
#     OLD=.devrun/old bash benchmarks/budget_device.sh
set -uo pipefail
cd "$(dirname "$0")/.."
old=${OLD:-.devrun/old}
out=${OUT:-results/speed/device}
py=${PYTHON:-python3}
a=${BUDGET_A:-2}
b=${BUDGET_B:-1.5}
export PYTHONUNBUFFERED=1
unset PYTHONPYCACHEPREFIX
work=$(mktemp -d /tmp/budget.XXXXXX)
mkdir -p "$out"
log="$work/budget_device.log"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv
  uptime
  "$py" -c "import sys, cupy, numpy, pydantic; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'pydantic', pydantic.__version__)"
} >"$log" 2>&1
IFS=: read -r -a extra <<<"${PYTHONPATH:-}"
"$py" -m compileall -q -j 0 launchbench "$old/launchbench" "${extra[@]}" >/dev/null 2>&1
"$py" -m launchbench run scenarios/quickstart.yaml --quiet --out-dir "$work/warm-up" --passes 1 --max-time 0.1 \
  >>"$log" 2>&1
timeout 300 "$py" benchmarks/speed_quickstart.py --old "$old" --old-runs 3 --new-runs 3 \
  --new-extra "--max-time $a" --work "$work/old-vs-$a" --out "$work/old-vs-$a.json" 2>&1 | tee -a "$log" | tail -3
timeout 240 "$py" benchmarks/speed_quickstart.py --old "$PWD" --old-extra "--max-time $a" --old-runs 3 --new-runs 3 \
  --new-extra "--max-time $b" --work "$work/$a-vs-$b" --out "$work/$a-vs-$b.json" 2>&1 | tee -a "$log" | tail -3
uptime >>"$log"
tar -czf "$out/budget.tar.gz" -C "$work" --exclude=warm-up . && ls -la "$out"
