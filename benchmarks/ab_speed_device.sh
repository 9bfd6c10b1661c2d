#!/usr/bin/env bash
# How long `launchbench ab` takes with an older tree's launchbench against this one's, alternating, on the
# GPU machine: the regression example (scenarios/ab_launch.yaml, examples/ab/base against
# examples/ab/pr, ab's defaults: 10 rounds, 4 s a case and side, workers pinned to one CPU), each
# invocation in a fresh process started from an empty folder, so the tree on PYTHONPATH is the one it
# runs (and its workers, which take their launchbench from it).
#
#     bash benchmarks/ab_speed_device.sh OLD_LAUNCHBENCH_DIR OUT [PAIRS]
#     SCENARIO=scenarios/quickstart.yaml bash benchmarks/ab_speed_device.sh OLD_LAUNCHBENCH_DIR OUT 1   # an A/A of it
#
# OLD_LAUNCHBENCH_DIR holds the older tree's `launchbench` package (e.g. `git archive OLD launchbench | tar
# x -C DIR`); extra import paths (pydantic where the machine lacks it) go in $EXTRA_PATH. Writes
# OUT/wall_time.txt (NAME: exit code, wall seconds, load average), OUT/env.txt, and per invocation
# OUT/NAME/ (both sides' run directories), OUT/NAME.txt and OUT/NAME-gate.md (the paired gate, markdown).
set -u
old=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
pairs=${3:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${SCENARIO:-}" ]; then  # another scenario: A/A, both sides the default variant
  scenario=$(cd "$(dirname "$SCENARIO")" && pwd)/$(basename "$SCENARIO")
  variants=()
else
  scenario=$repo/scenarios/ab_launch.yaml
  variants=(--a "path=$repo/examples/ab/base" --b "path=$repo/examples/ab/pr")
fi
extra=${EXTRA_PATH:+$EXTRA_PATH:}
empty=$(mktemp -d)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import cupy, sys; print(sys.version.split()[0], 'cupy', cupy.__version__)"
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/env.txt" 2>&1
one() { # NAME ROOT
  local name=$1 root=$2 start rc
  start=$(date +%s.%N)
  (cd "$empty" && PYTHONPATH="$extra$root" python3 -m launchbench ab "$scenario" "${variants[@]}" --quiet --out "$out/$name" \
    --gate-rows host-bound --fail-on wall_us_per_launch:5% --format markdown -o "$out/$name-gate.md" >"$out/$name.txt" 2>&1)
  rc=$?
  echo "$name: exit $rc, $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s wall, load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/wall_time.txt"
}
for n in $(seq 1 "$pairs"); do
  one "new-$n" "$repo"
  one "old-$n" "$old"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"
