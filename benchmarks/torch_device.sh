#!/usr/bin/env bash
# The torch evidence on one GPU machine with torch and CuPy, in one call of at most 4 minutes:
# scenarios/decode_torch.yaml in all three modes (eager, graph: CuPy's stream capture of the torch ops,
# torch_graph: torch.cuda.CUDAGraph), its batch-size capture table and figure, the torch GPU tests and
# tests/test_gpu.py.
# Everything lands in results/torch-h200/ (the run, its capture table and figure, the logs) and is packed
# into one file, PACK/torch-h200.tar.gz (PACK: the first argument, else $OUT, else results), so a device
# call brings back one file; the key lines are printed too. Exits 1 when the run or the tests fail,
# after running all of it.
#
#     bash benchmarks/torch_device.sh [PACK]
set -uo pipefail
out=${1:-${OUT:-results}}
work=results/torch-h200
rm -rf "$work"
mkdir -p "$work" "$out"
failed=()
lb() { python3 -m launchbench "$@"; }
python3 - > "$work/versions.txt" 2>&1 <<'EOF'
import platform, cupy, torch
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| cupy", cupy.__version__, "| gpu", torch.cuda.get_device_name(0))
EOF
cat "$work/versions.txt"
start=$(date +%s)
timeout 140 python3 -m launchbench run scenarios/decode_torch.yaml --out-dir "$work/run" > "$work/run.log" 2>&1
status=$?
[ "$status" -eq 0 ] || failed+=("decode_torch run (exit $status)")
echo "decode_torch run: exit $status, $(( $(date +%s) - start )) s" | tee "$work/status.txt"
tail -25 "$work/run.log"
if [ -f "$work/run/results.json" ]; then
  lb capture-table "$work/run" --out-dir "$work/run/capture" > "$work/capture.log" 2>&1 \
    || failed+=("capture-table (exit $?)")
  cat "$work/capture.log"
  python3 - "$work/run/results.csv" <<'EOF' | tee "$work/rows.txt"
import sys
import pandas as pd
t = pd.read_csv(sys.argv[1])
cols = ["case", "mode", "status", "wall_us_per_iter", "cpu_us_per_iter", "gpu_us_per_iter", "capture_us",
        "instantiate_us", "first_launch_us", "graph_nodes", "graph_mem_bytes", "graph_pool_bytes",
        "outputs_match", "reason"]
with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 70):
    print(t[[c for c in cols if c in t]].to_string(index=False))
EOF
fi
timeout 50 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_torch_gpu.py -s -rA > "$work/pytest.log" 2>&1
status=$?
[ "$status" -eq 0 ] || failed+=("torch GPU tests (exit $status)")
echo "torch GPU tests: exit $status" | tee -a "$work/status.txt"
grep -E "batch|allocating|syncing|mixed|passed|failed|skipped|Error|assert" "$work/pytest.log" | tail -40
# the CuPy backend's own GPU tests: the graph mode's life cycle and the table stay as they are
timeout 40 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py > "$work/pytest_cupy.log" 2>&1
status=$?
[ "$status" -eq 0 ] || failed+=("CuPy GPU tests (exit $status)")
echo "CuPy GPU tests (tests/test_gpu.py): exit $status" | tee -a "$work/status.txt"
tail -5 "$work/pytest_cupy.log"
tar -czf "$out/torch-h200.tar.gz" -C results torch-h200
echo "packed: $out/torch-h200.tar.gz"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'torch evidence failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "torch evidence: all of it holds"
