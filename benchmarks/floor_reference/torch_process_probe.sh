#!/usr/bin/env bash
# torch_process_probe.sh DIR [ROUNDS]: ROUNDS (6) rounds of fresh processes, the order reversed every other
# round: torch_process_probe.py in each variant, `launchbench floor --layer torch` and `launchbench floor`
# (every layer); DIR/summary.txt: each variant's torch rows by round (µs per launch).
set -u
out=${1:?usage: torch_process_probe.sh DIR [ROUNDS]}; mkdir -p "$out"
here=$(dirname "$0")
order="plain floor_torch interleaved floor_all after_cupy interleaved_latency"
for i in $(seq 1 "${2:-6}"); do
  [ $((i % 2)) = 0 ] && list=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ') || list=$order
  for v in $list; do
    case $v in
      floor_torch) timeout 60 python3 -m launchbench floor --layer torch --max-time 2 -q -d "$out/ft-$i" >"$out/ft-$i.log" 2>&1 ;;
      floor_all) timeout 60 python3 -m launchbench floor --max-time 5 -q -d "$out/fa-$i" >"$out/fa-$i.log" 2>&1 ;;
      *) timeout 60 python3 "$here/torch_process_probe.py" "$v" >"$out/$v-$i.jsonl" 2>"$out/$v-$i.err" ;;
    esac
  done
done
python3 - "$out" <<'PY' >"$out/summary.txt"
import csv, glob, json, os, statistics, sys
d = sys.argv[1]; rows = {}
for f in sorted(glob.glob(f"{d}/*.jsonl")):
    v, i = os.path.basename(f)[:-6].rsplit("-", 1)
    for line in open(f):
        j = json.loads(line)
        if j.get("layer") == "torch":
            rows.setdefault((v, j["mode"]), []).append((int(i), j["us_per_launch"]))
for p in sorted(glob.glob(f"{d}/f[at]-*/results.csv")):
    v, i = p.split("/")[-2].rsplit("-", 1)
    for r in csv.DictReader(open(p)):
        if r["case"].startswith("torch"):
            name = {"ft": "floor_torch", "fa": "floor_all"}[v]
            rows.setdefault((name, r["mode"]), []).append((int(i), float(r["wall_us_per_launch"])))
for (v, m), vals in sorted(rows.items()):
    vals.sort()
    median = statistics.median(x for _, x in vals)
    print(f"{v:22s} {m:6s} median {median:.3f}  by round {[round(x, 3) for _, x in vals]}")
PY
cat "$out/summary.txt"
