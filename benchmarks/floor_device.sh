#!/usr/bin/env bash
# launchbench floor on a GPU machine in one go (about 3-4 minutes): the floor run itself (the run
# committed as results/floor-h200), the C++ reference built with nvcc, the fidelity rounds (launchbench
# floor against launch.cu and the bare Python loops, each in its own fresh process), compare and plot on
# the floor runs, and the host facts; everything packed into one tarball, $OUT/floor.tar.gz.
#
#     OUT=/some/dir bash benchmarks/floor_device.sh
set -uo pipefail
out=${OUT:-results/floor-device}
work=$(mktemp -d)
mkdir -p "$out"
lb() { python3 -m launchbench "$@"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$work/steps.txt"; }

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
  for f in /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; do echo "$f: $(cat "$f" 2>/dev/null)"; done
} >"$work/host.txt" 2>&1

log "launchbench floor (the committed run)"
timeout 100 python3 -m launchbench --debug floor -d "$work/floor-h200" --max-time 20 >"$work/floor.log" 2>&1
log "floor exit $?"

log "nvcc launch.cu"
libcuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
build() { nvcc -O2 -o "$work/launch" benchmarks/floor_reference/launch.cu "$@" >>"$work/nvcc.log" 2>&1; }
build -lcuda || { [ -n "$libcuda" ] && build -Xlinker "$libcuda"; } || build -L/usr/local/cuda/lib64/stubs -lcuda
log "nvcc exit $?"
timeout 20 "$work/launch" 5000 5 1 >"$work/launch-once.txt" 2>&1
log "launch once exit $?"

log "fidelity rounds"
timeout 170 python3 benchmarks/floor_fidelity.py --launch "$work/launch" --rounds 3 --max-time 10 --count 5000 \
  --batches 7 --out "$work/fidelity" >"$work/fidelity.log" 2>&1
log "fidelity exit $?"

log "compare and plot"
if [ -f "$work/floor-h200/results.json" ] && [ -f "$work/fidelity/floor-r0/results.json" ]; then
  lb compare "$work/floor-h200" "$work/fidelity/floor-r0" --format markdown --output "$work/compare.md" >"$work/compare.log" 2>&1
  log "compare exit $?"
fi
[ -f "$work/floor-h200/results.json" ] && { lb plot "$work/floor-h200" -d "$work/floor-h200/plots" >"$work/plot.log" 2>&1; log "plot exit $?"; }

tar czf "$out/floor.tar.gz" -C "$work" .
log "packed $out/floor.tar.gz"
cp "$work/steps.txt" "$out/steps.txt"
cat "$work/floor-h200/floor.md" 2>/dev/null || tail -30 "$work/floor.log"
cat "$work/fidelity/fidelity.md" 2>/dev/null || tail -20 "$work/fidelity.log"
