#!/usr/bin/env bash
# Wall time of the CPU test suite, and its 30 slowest tests.
#   bash benchmarks/suite_speed.sh          # from the repository root, in the project's virtualenv
# Prints pytest's summary (its last line holds the wall time) and the durations table. Run it on an
# otherwise idle machine: other processes' CPU load lengthens every test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "cores: $(nproc), load average before: $(cut -d' ' -f1 /proc/loadavg)"
start=$(date +%s.%N)
python -m pytest -q -p no:cacheprovider --durations=30 "$@"
end=$(date +%s.%N)
python3 -c "print(f'wall: {$end - $start:.1f} s')"
