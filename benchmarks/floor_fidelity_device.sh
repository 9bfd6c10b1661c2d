#!/usr/bin/env bash
# The floor's fidelity alone on a GPU machine (at most 170 s at the defaults, BUDGET_S + 35 s otherwise):
# launch.cu built with nvcc, then the fidelity rounds (launchbench floor against launch.cu and the bare
# Python loops, each in its own fresh process: ROUNDS (3) rounds of one floor process and BARE (3) turns
# of every reference, the gpu layer's once a round),
# left under $OUT as three files: fidelity.md (the table), fidelity.json (every value) and
# fidelity-logs.tar.gz (each process's log and the floor runs' results.json, and steps.txt).
#
#     OUT=/some/dir bash benchmarks/floor_fidelity_device.sh
#     OUT=/some/dir ROUNDS=10 BARE=1 BUDGET_S=480 bash benchmarks/floor_fidelity_device.sh   # more floor processes
#     OUT=/some/dir ROUNDS=10 BARE=1 TOGETHER=1 BUDGET_S=480 bash benchmarks/floor_fidelity_device.sh   # and the
#       Python layers in one process each round (floor_fidelity.py --together)
set -uo pipefail
out=${OUT:-results/floor-fidelity-device}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$work/steps.txt"; }
. benchmarks/floor_reference/steps.sh

build_launch "$work"
budget=${BUDGET_S:-135}
fidelity_rounds "$work" "$budget" $((budget + 25)) "${ROUNDS:-3}" "${BARE:-3}" "${TOGETHER:-0}"

cp "$work/fidelity/fidelity.md" "$work/fidelity/fidelity.json" "$out/" 2>/dev/null
tar czf "$out/fidelity-logs.tar.gz" -C "$work" --exclude launch --exclude '*.png' --exclude floor.md \
  --exclude fidelity.json --exclude fidelity.md --exclude results.csv .
rm -rf "$work"
ls "$out"
tail -4 "$out/fidelity.md" 2>/dev/null
