#!/usr/bin/env bash
# The flight recorder's benchmark (DEVTRACE_MAX_MB): the trace's size after N
# and 10xN steps, unbounded and under a cap, with the run's wall time and the
# writer's CPU time spent pruning: with the cap, the size stays flat. Two
# workloads: the C loop bench/gen_trace (6 events a step, simulated GPU) and
# the PyTorch MLP of bench/pytorch_train.py (~34 events a step, cpu).
# Usage: bench/flight.sh [BUILD_DIR] [C_STEPS] [C_CAP_MB] [PY_STEPS] [PY_CAP_MB]
# (default build 100000 8 300 1; ~2 min on a loaded 2-core machine)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
CN=${2:-100000}
CMB=${3:-8}
PN=${4:-300}
PMB=${5:-1}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta() { sqlite3 "$1" "select coalesce((select value from meta where key='$2'), 0)"; }
one() { # label cap db cmd...
  local label=$1 cap=$2 db=$tmp/$3
  shift 3
  local s e
  s=$(date +%s%N)
  DEVTRACE_SIM_CUDA=1 $B/viewer/devtrace run -q --max-mb "$cap" -o "$db" -- "$@" >/dev/null 2>&1 || true
  e=$(date +%s%N)
  printf "  %-28s cap %5s MB: %10d bytes, %9d events recorded, %9d pruned, %6d ms wall, %5d ms pruning\n" \
    "$label" "$cap" "$(stat -c %s "$db")" "$(meta "$db" events_recorded)" "$(meta "$db" pruned_events)" \
    $(((e - s) / 1000000)) $(($(meta "$db" prune_ns) / 1000000))
}
echo "== C loop (bench/gen_trace), $CN and $((10 * CN)) steps"
for cap in 0 "$CMB"; do
  for n in "$CN" $((10 * CN)); do one "gen_trace $n" "$cap" "c.$cap.$n.db" "$B/bench/gen_trace" "$n"; done
done
if $PY -c "import torch" 2>/dev/null; then
  echo "== PyTorch MLP (bench/pytorch_train.py), $PN and $((10 * PN)) steps"
  for cap in 0 "$PMB"; do
    for n in "$PN" $((10 * PN)); do one "pytorch_train.py mlp $n" "$cap" "p.$cap.$n.db" $PY bench/pytorch_train.py mlp "$n"; done
  done
else
  echo "== PyTorch MLP: skipped ($PY cannot import torch)"
fi
