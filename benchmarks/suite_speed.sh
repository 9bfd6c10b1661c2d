#!/usr/bin/env bash
# Wall and CPU time of the CPU test suite, run as .ci/run runs it (pytest-xdist: one worker per core,
# each test file in one worker), and its 30 slowest tests.
#   bash benchmarks/suite_speed.sh          # from the repository root, in the project's virtualenv
# Prints the cores and the load average before and after, pytest's summary and durations table, then
# the wall time and the CPU time (user + system, every process of the suite). Run it on an otherwise
# idle machine: other processes' load lengthens the wall time of every test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "cores: $(nproc), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='wall: %R s, CPU: %U s user + %S s system'
{ time python -m pytest -q -p no:cacheprovider -n auto --dist loadfile --durations=30 "$@"; } 2>&1
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
