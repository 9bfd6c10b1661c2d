#!/usr/bin/env bash
# torch layer: bare_layers.py torch against launchbench floor --layer torch, fresh processes, alternating.
out=${1:?usage: torch_probe.sh DIR}; mkdir -p "$out"
for i in 1 2 3 4; do
  python3 benchmarks/floor_reference/bare_layers.py torch --batches 7 > $out/bare-$i.jsonl 2>$out/bare-$i.err
  python3 -m launchbench floor --layer torch --max-time 2 -q -d $out/floor-$i > $out/floor-$i.log 2>&1
  python3 - $out/floor-$i <<'PY' >> $out/summary.txt
import sys,csv,json,glob
d=sys.argv[1]; i=d.rsplit('-',1)[1]
b=[json.loads(l) for l in open(f"{d.rsplit('/',1)[0]}/bare-{i}.jsonl") if l.strip()]
rows=list(csv.DictReader(open(f"{d}/results.csv")))
print(i, 'bare', {x['mode']:x['us_per_launch'] for x in b}, 'floor', {r['mode']:(r['wall_us_per_launch'], r.get('wall_us_per_launch_n')) for r in rows if r['case'].startswith('torch')})
PY
done
cat $out/summary.txt
