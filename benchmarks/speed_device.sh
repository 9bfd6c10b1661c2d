#!/usr/bin/env bash
# The run's own time, old code against new, on one GPU machine in one go (at most 9 minutes), in the
# order of what matters most, each step with what is left of the time:
#   1. bytecode for both trees and PYTHONPATH, one short uncounted run (CuPy's kernel cache, the clocks);
#   2. quickstart, old and new alternating, 3 runs each (RUNS for another count;
#      benchmarks/speed_quickstart.py; the old code on OLD/scenarios/quickstart.yaml where OLD has one,
#      e.g. from git archive OLD_COMMIT launchbench scenarios);
#   3. with PREV set (a second older checkout, e.g. the last commit before a change), quickstart, PREV
#      and new alternating, 3 runs each: what the change alone did, on the same machine start;
#   4. the phase profile of the new quickstart (1 run, benchmarks/profile_phases.py);
#   5. shape_changes, new then old (one run each: the old one took 187 s before), then new again.
# STEPS picks among quickstart, prev, lower (this tree at --max-time LOWER, default 1.6, 2 runs after
# the quickstart step's), profile and shape (default all but prev, which PREV adds, and lower), e.g.
# STEPS=shape for a second call. RUNS sets the quickstart step's runs a side and QUICKSTART_CAP its
# time (default 360 s); PROFILE_SCENARIO the profile step's scenario (default the quickstart) and
# PROFILE_CAP its time (default 90 s).
# Every step is logged with its time, runs under `timeout` within what is left of the 9 minutes, and a
# failed step does not stop the next. The old code is the checkout at OLD (default .devrun/old, its
# launchbench importable with PYTHONPATH); the new is this tree. Everything lands in one tarball
# under OUT (default $OUT, else results/speed/device), beside the log and the summary lines:
#
#     OLD=.devrun/old bash benchmarks/speed_device.sh
#     OLD=.devrun/old STEPS=shape BUDGET_S=520 bash benchmarks/speed_device.sh   # shape_changes alone
set -uo pipefail
cd "$(dirname "$0")/.."
old=${OLD:-.devrun/old}
out=${OUT:-results/speed/device}
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
# bytecode beside the sources, as a normal installation has it: no PYTHONPYCACHEPREFIX, which would hide
# the bytecode the machine's packages carry beside them and have every process compile those again
# (3-6 s a quickstart run on the H200 image, results/speed/startup-h200)
unset PYTHONPYCACHEPREFIX
budget=${BUDGET_S:-530}  # seconds for every step together; the tarball after them
begin=$(date +%s)
mkdir -p "$out"
work=$(mktemp -d /tmp/speed26.XXXXXX)
log="$out/speed_device.log"
summary="$out/summary.txt"
: >"$log"
: >"$summary"
say() { echo "$(date -u +%H:%M:%S) [+$(($(date +%s) - begin)) s] $*" | tee -a "$log"; }
left() { echo $((budget - ($(date +%s) - begin))); }
prev=${PREV:-}
steps=" ${STEPS:-quickstart ${prev:+prev} profile shape} "
wanted() { [[ $steps == *" $1 "* ]]; }  # wanted NAME: the step is in STEPS
step() {  # step NAME CAP_SECONDS COMMAND...: under timeout, within what is left; never stops the script
  local name=$1 cap=$2 rest
  shift 2
  rest=$(left)
  [ "$rest" -lt "$cap" ] && cap=$rest
  if [ "$cap" -le 5 ]; then
    say "$name: skipped, no time left"
    echo "$name: skipped (no time left)" >>"$summary"
    return
  fi
  say "$name: start (timeout ${cap} s): $*"
  timeout --kill-after=10 "$cap" "$@" >>"$log" 2>&1
  local status=$?
  say "$name: exit $status"
  [ "$status" -eq 0 ] || echo "$name: exit $status" >>"$summary"
}
say "speed_device: old=$old out=$out work=$work python=$($py --version 2>&1)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv >>"$log" 2>&1
uptime >>"$log" 2>&1
[ -d "$old/launchbench" ] || say "no old checkout at $old/launchbench: the old runs will fail"
# bytecode in place for both trees, what PYTHONPATH adds (wheels installed with --no-compile) and the
# machine's NumPy (the H200 image ships it without any): the image sets PYTHONDONTWRITEBYTECODE, so a
# module without bytecode is compiled again in every process that imports it
IFS=: read -r -a extra <<<"${PYTHONPATH:-}"
dirs=()
for dir in "${extra[@]}"; do [ -n "$dir" ] && [ -d "$dir" ] && dirs+=("$dir"); done
numpy_dir=$("$py" -c "import numpy, os; print(os.path.dirname(numpy.__file__))" 2>/dev/null)
[ -n "$numpy_dir" ] && [ -w "$numpy_dir" ] && dirs+=("$numpy_dir")
step "compile bytecode" 90 "$py" -m compileall -q -j 0 launchbench "$old/launchbench" ${prev:+"$prev/launchbench"} "${dirs[@]}"
step "warm-up run (not counted): new quickstart, 1 short pass" 60 "$py" -m launchbench run \
  scenarios/quickstart.yaml --quiet --out-dir "$work/warm-up" --passes 1 --max-time 0.1
# the old code (and PREV's) runs its own quickstart.yaml where the checkout has one (this tree's may hold
# settings the old code refuses, and the old file is what the old code's figures were made with)
own_quickstart() {  # own_quickstart CHECKOUT: --old-scenario with its quickstart.yaml, where it has one
  [ -f "$1/scenarios/quickstart.yaml" ] && echo "--old-scenario $1/scenarios/quickstart.yaml"
}
read -r -a old_quickstart <<<"$(own_quickstart "$old")"
read -r -a prev_quickstart <<<"$(own_quickstart "${prev:-/nonexistent}")"
wanted quickstart && step "quickstart: old x${RUNS:-3}, new x${RUNS:-3}" "${QUICKSTART_CAP:-360}" "$py" benchmarks/speed_quickstart.py \
  --old "$old" "${old_quickstart[@]}" --old-runs "${RUNS:-3}" --new-runs "${RUNS:-3}" --work "$work/quickstart" \
  --out "$work/quickstart.json"
wanted prev && step "quickstart: prev ($prev) x3, new x3" 300 "$py" benchmarks/speed_quickstart.py \
  --old "$prev" "${prev_quickstart[@]}" --old-runs 3 --new-runs 3 --work "$work/quickstart-prev" \
  --out "$work/quickstart-prev.json"
wanted lower && step "quickstart: new at --max-time ${LOWER:-1.6}, x2" 120 "$py" benchmarks/speed_quickstart.py \
  --old . --old-runs 0 --new-runs 2 --new-extra "--max-time ${LOWER:-1.6}" --work "$work/quickstart-lower" \
  --out "$work/quickstart-lower.json"
profiled=${PROFILE_SCENARIO:-scenarios/quickstart.yaml}
profile_name=$(basename "$profiled" .yaml)
wanted profile && step "profile: new $profile_name" "${PROFILE_CAP:-90}" "$py" benchmarks/speed_quickstart.py \
  --profile --scenario "$profiled" --work "$work/profile" --out "$work/$profile_name-profile.json"
wanted shape && step "shape_changes: new, old" 330 "$py" benchmarks/speed_quickstart.py --old "$old" \
  --scenario scenarios/shape_changes.yaml --first new --old-runs 1 --new-runs 1 \
  --work "$work/shape_changes" --out "$work/shape_changes.json"
wanted shape && step "shape_changes: new again" 150 "$py" benchmarks/speed_quickstart.py --old "$old" \
  --scenario scenarios/shape_changes.yaml --old-runs 0 --new-runs 1 \
  --work "$work/shape_changes-2" --out "$work/shape_changes-2.json"
for name in quickstart quickstart-prev quickstart-lower shape_changes shape_changes-2; do
  [ -f "$work/$name.json" ] && "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['summary'])" \
    "$work/$name.json" >>"$summary" 2>>"$log"
done
[ -f "$work/$profile_name-profile.json" ] && cat "$work/$profile_name-profile.json" >>"$summary"
uptime >>"$log" 2>&1
say "packing"
cp "$log" "$summary" "$work/" 2>/dev/null
tar -czf "$out/speed26.tar.gz" -C "$work" . >>"$log" 2>&1 || say "tar failed"
if [ "$(stat -c %s "$out/speed26.tar.gz" 2>/dev/null || echo 0)" -gt 15000000 ]; then
  say "tarball over 15 MB: packing the figures and tables only (no results.json or journals)"
  tar -czf "$out/speed26.tar.gz" -C "$work" --exclude='results.json' --exclude='*.jsonl' . >>"$log" 2>&1
fi
say "done: $(ls -la "$out" | tr '\n' ' ')"
cat "$summary"
