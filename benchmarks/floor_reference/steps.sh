# The fidelity's two device steps, sourced by benchmarks/floor_device.sh and
# benchmarks/floor_fidelity_device.sh (each defines log): launch.cu built with nvcc, and the rounds.

# build_launch DIR: DIR/launch from launch.cu (nvcc's output in DIR/nvcc.log), linked against libcuda
# where ldconfig finds it, else the toolkit's stub.
build_launch() {
  local dir=$1 libcuda
  libcuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
  build() { nvcc -O2 -o "$dir/launch" benchmarks/floor_reference/launch.cu "$@" >>"$dir/nvcc.log" 2>&1; }
  log "nvcc launch.cu"
  build -lcuda || { [ -n "$libcuda" ] && build -L"$(dirname "$libcuda")" -lcuda; } ||
    build -L/usr/local/cuda/lib64/stubs -lcuda
  log "nvcc exit $?"
}

# fidelity_rounds DIR BUDGET TIMEOUT [ROUNDS] [BARE] [TOGETHER]: ROUNDS (default 3) rounds of one floor
# process, BARE (default 3) turns of every reference and TOGETHER (default 0) processes of every Python
# layer in one into DIR/fidelity (log DIR/fidelity.log); no process starts after BUDGET seconds, all ends
# by TIMEOUT.
fidelity_rounds() {
  local dir=$1 budget=$2 limit=$3 rounds=${4:-3} bare=${5:-3} together=${6:-0}
  log "fidelity rounds ($rounds rounds: one floor process, $bare turns of each reference, $together of the Python layers together; budget ${budget} s)"
  timeout "$limit" python3 benchmarks/floor_fidelity.py --launch "$dir/launch" --rounds "$rounds" --bare "$bare" --together "$together" \
    --max-time 5 --stretches 8 --batches 40 --ref-stretch 5 --sample-time 0.005 --budget "$budget" \
    --out "$dir/fidelity" >"$dir/fidelity.log" 2>&1
  log "fidelity exit $?"
}
