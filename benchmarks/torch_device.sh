#!/usr/bin/env bash
# The torch evidence on one GPU machine with torch and CuPy, in one call of at most 4 minutes:
#   1. benchmarks/torch_probe.py: a bare 100-node CuPy graph's replay µs/node before and after each step
#      of the torch_graph life cycle (and of the graph mode, and of execute_case over the decode sizes),
#      each variant in a fresh process (at most 90 s);
#   2. scenarios/decode_torch.yaml in all three modes (eager, graph: CuPy's stream capture of the torch
#      ops, torch_graph: torch.cuda.CUDAGraph), both chains (decode, decode_natural);
#   3. its batch-size capture table and figure, and the rows of results.csv that say it all;
#   4. the torch GPU tests (tests/kinds/test_torch_gpu.py). tests/backend/test_gpu.py is run on its own (it takes
#      more than this call has).
# Every step runs whatever the one before it did, and logs; the status of each is in status.txt.
# Everything lands in results/torch-h200/ and is packed into one file, PACK/torch-h200.tar.gz (PACK: the
# first argument, else $OUT, else results). Exits 1 when any step fails, after running all of them.
#
#     bash benchmarks/torch_device.sh [PACK]
set -uo pipefail
out=${1:-${OUT:-results}}
work=results/torch-h200
rm -rf "$work"
mkdir -p "$work" "$out"
failed=()
began=$(date +%s)
step() {  # step NAME LOG TIMEOUT COMMAND...: run it, log it, record its exit status; never stop here
  local name=$1 log=$2 limit=$3 start status
  shift 3
  start=$(date +%s)
  timeout "$limit" "$@" > "$log" 2>&1
  status=$?
  [ "$status" -eq 0 ] || failed+=("$name (exit $status)")
  echo "$name: exit $status, $(( $(date +%s) - start )) s (log: $log)" | tee -a "$work/status.txt"
}
python3 - > "$work/versions.txt" 2>&1 <<'EOF'
import platform, cupy, torch
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| cupy", cupy.__version__, "| gpu", torch.cuda.get_device_name(0))
EOF
cat "$work/versions.txt"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv >> "$work/versions.txt" 2>&1

# 1. the probe first, on a GPU nothing else has touched yet in this call
step "torch probe" "$work/probe.log" 105 python3 benchmarks/torch_probe.py --budget 90 --out "$work/probe.json"
grep -E "^probe:|^variant|<-- moved" "$work/probe.log" | head -60
sed -n '/^variant/,$p' "$work/probe.log" > "$work/probe_table.txt"

# 2. the decode run
step "decode_torch run" "$work/run.log" 110 python3 -m launchbench run scenarios/decode_torch.yaml --out-dir "$work/run"
tail -45 "$work/run.log"

# 3. its capture table and the rows of results.csv
if [ -f "$work/run/results.json" ]; then
  step "capture-table" "$work/capture.log" 25 python3 -m launchbench capture-table "$work/run" --out-dir "$work/run/capture"
  cat "$work/capture.log"
  step "rows" "$work/rows.txt" 15 python3 - "$work/run/results.csv" <<'EOF'
import sys
import pandas as pd
t = pd.read_csv(sys.argv[1])
cols = ["case", "mode", "status", "wall_us_per_iter", "cpu_us_per_iter", "gpu_us_per_iter", "capture_us",
        "instantiate_us", "upload_us", "first_launch_us", "graph_nodes", "graph_mem_bytes", "graph_pool_bytes",
        "outputs_match", "reason"]
with pd.option_context("display.width", 300, "display.max_columns", 30, "display.max_colwidth", 60):
    print(t[[c for c in cols if c in t]].to_string(index=False))
EOF
  cat "$work/rows.txt"
else
  failed+=("capture-table (no results.json)")
  echo "capture-table: skipped, the run wrote no results.json" | tee -a "$work/status.txt"
fi

# 4. the torch GPU tests
step "torch GPU tests" "$work/pytest.log" 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/kinds/test_torch_gpu.py -s -rA
grep -E "batch|natural|allocating|syncing|mixed|passed|failed|skipped|Error|assert" "$work/pytest.log" | tail -40

echo "all steps: $(( $(date +%s) - began )) s" | tee -a "$work/status.txt"
tar -czf "$out/torch-h200.tar.gz" -C results torch-h200
echo "packed: $out/torch-h200.tar.gz"
cat "$work/status.txt"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'torch evidence failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "torch evidence: all of it holds"
