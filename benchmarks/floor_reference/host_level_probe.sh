#!/usr/bin/env bash
# host_level_probe.sh DIR: two probes of what sets the host's level, with launch.cu (built with nvcc) alone,
# no Python in the timed processes.
# - DIR/cores.txt: three rounds of one launch.cu process pinned to each CPU the shell may use (taskset),
#   then six unpinned; each process's JSON lines after a "# cpu=N round=R" line.
# - DIR/age.txt: five launch.cu processes of about 16 s each (120 batches of 5 ms a method, medians of 5
#   batches a stretch, in time order), the process's Rss and AnonHugePages read every 0.5 s beside them.
# DIR/host.txt: lscpu, the GPU's topology, the CPUs' MHz; DIR/thp.txt: transparent huge page settings.
set -u
out=${1:?usage: host_level_probe.sh DIR}; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
. "$(dirname "$0")/steps.sh"
w=$(mktemp -d)
build_launch "$w"
{ lscpu; nvidia-smi topo -m; grep MHz /proc/cpuinfo; uptime; } >"$out/host.txt" 2>&1
{ for f in enabled defrag khugepaged/defrag khugepaged/scan_sleep_millisecs khugepaged/pages_to_scan; do
    echo "$f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>&1)"; done; uptime; } >"$out/thp.txt"
cpus=$(python3 -c "import os; print(' '.join(map(str, sorted(os.sched_getaffinity(0)))))")
for r in 1 2 3; do
  for c in $cpus; do echo "# cpu=$c round=$r"; taskset -c "$c" "$w/launch" 3000 9 1 0 3 | grep -v triple; done
  for u in 1 2 3 4 5 6; do echo "# cpu=any round=$r"; "$w/launch" 3000 9 1 0 3 | grep -v triple; done
done >"$out/cores.txt" 2>&1
log "cores done"
for i in 1 2 3 4 5; do
  echo "# process $i"
  "$w/launch" 3000 120 1 5000 5 >"$w/p$i.out" 2>&1 &
  pid=$!
  t=0
  while kill -0 $pid 2>/dev/null; do
    echo "t=$t $(grep -E 'AnonHugePages|Rss' /proc/$pid/smaps_rollup 2>/dev/null | tr -s ' ' | tr '\n' ' ')"
    sleep 0.5; t=$((t + 1))
  done
  grep -v triple "$w/p$i.out"
done >"$out/age.txt" 2>&1
log "age done"
rm -rf "$w"
