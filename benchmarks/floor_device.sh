#!/usr/bin/env bash
# launchbench floor on a GPU machine in one go (about 3.5 minutes, each step under its own timeout):
# the host facts (sysfs: the GPU's NUMA node, cpufreq), the floor run itself (the run committed as
# results/floor-h200, with floor.md and floor.png), the C++ reference built with nvcc, the fidelity
# rounds (launchbench floor against launch.cu and the bare Python loops, each in its own fresh process,
# compared level to level), `launchbench run` of a small scenario with a floor: block (its layers
# cases of the run) and `plot` of it (floor.png among the figures), compare of two floor runs; all of
# it in $OUT (default results/floor-device), and packed as $OUT/floor.tar.gz.
#
#     OUT=/some/dir bash benchmarks/floor_device.sh
set -uo pipefail
out=${OUT:-results/floor-device}
mkdir -p "$out"
out=$(cd "$out" && pwd)
lb() { python3 -m launchbench "$@"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/steps.txt"; }
. benchmarks/floor_reference/steps.sh

log "host facts"
{
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm --format=csv
  nvidia-smi topo -m
  lscpu
  uname -a
  python3 -c "import sys, cupy; print(sys.version); print('cupy', cupy.__version__)"
  python3 -c "import cuda.bindings; print('cuda-bindings', cuda.bindings.__version__)"
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  cc --version | head -1
  nvcc --version | tail -2
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | sed 's/^0000//' | tr 'A-F' 'a-f')
  for f in /sys/bus/pci/devices/$bus/numa_node /sys/devices/system/cpu/smt/active \
    /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; do
    echo "$f: $(cat "$f" 2>&1)"
  done
} >"$out/host.txt" 2>&1

log "launchbench floor (the committed run)"
timeout 60 python3 -m launchbench --debug floor -d "$out/floor-h200" --max-time 12 >"$out/floor.log" 2>&1
log "floor exit $?"

build_launch "$out"
fidelity_rounds "$out" 150 170

log "run of a scenario with a floor: block, and its plot"
cat >"$out/run-floor.yaml" <<'YAML'
name: run-floor
description: one empty kernel, then the floor's C and CuPy RawKernel layers as cases of the same run
chain:
  - kind: empty
measure: {passes: 1, max_time: 1}
floor: {layers: [c, cupy_raw], args: [0, 16], max_time: 3}
YAML
timeout 40 python3 -m launchbench run "$out/run-floor.yaml" -d "$out/run-floor" -q >"$out/run-floor.log" 2>&1
log "run exit $?"
[ -f "$out/run-floor/results.json" ] && { lb plot "$out/run-floor" >>"$out/run-floor.log" 2>&1; log "plot exit $?"; }

log "compare and plot of the floor runs"
if [ -f "$out/floor-h200/results.json" ] && [ -f "$out/fidelity/floor-r0/results.json" ]; then
  lb compare "$out/floor-h200" "$out/fidelity/floor-r0" --format markdown --output "$out/compare.md" >"$out/compare.log" 2>&1
  log "compare exit $?"
fi
[ -f "$out/floor-h200/results.json" ] && { lb plot "$out/floor-h200" -d "$out/floor-h200/plots" >"$out/plot.log" 2>&1; log "plot exit $?"; }

tar czf "$out/floor.tar.gz" -C "$out" --exclude floor.tar.gz --exclude launch .
log "packed $out/floor.tar.gz"
cat "$out/floor-h200/floor.md" 2>/dev/null || tail -30 "$out/floor.log"
cat "$out/fidelity/fidelity.md" 2>/dev/null || tail -20 "$out/fidelity.log"
grep -c '"kinds": "floor"' "$out/run-floor/results.json" 2>/dev/null | sed 's/^/run-floor floor cases (json lines): /'
ls "$out/run-floor/plots" 2>/dev/null
