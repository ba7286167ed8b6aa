#!/usr/bin/env bash
# The flight recorder's benchmark (DEVTRACE_MAX_MB): the trace's size after N
# and 10xN steps under a cap, and after 10xN unbounded, the largest the file
# and its WAL were during the run (sampled every 0.2 s), the run's wall time
# and the writer's CPU time spent pruning: with the cap, the size stays
# flat. The workloads: the C loop bench/gen_trace (6 events a step, simulated
# GPU) and those of bench/pytorch_train.py on the cpu (mlp ~34 events a step,
# cnn ~46, gpt ~476, resnet ~252), each N chosen so that N steps make about
# what the cap keeps (the pruning starts at 55 % of it) and 10xN several
# times the cap.
# Usage: bench/flight.sh [BUILD_DIR] [C_STEPS] [C_CAP_MB] [MLP_STEPS] [PY_CAP_MB] [WORKLOAD:STEPS...]
# (default: build 100000 8 300 1 mlp:300 cnn:150 gpt:20 resnet:40; ~5 min on
# a loaded 2-core machine; C_STEPS 0 skips the C loop)
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "bench/flight.sh: $*" >&2; exit 2; }
B=${1:-build}
CN=${2:-100000}
CMB=${3:-8}
PN=${4:-300}
PMB=${5:-1}
if [ $# -gt 5 ]; then shift 5; else set --; fi
WORKLOADS=(mlp:"$PN" cnn:150 gpt:20 resnet:40)
if [ $# -gt 0 ]; then WORKLOADS=("$@"); fi
PY=/usr/bin/python3
for v in "$CN" "$CMB" "$PN" "$PMB"; do [[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a non-negative integer"; done
if [ "$CMB" = 0 ] || [ "$PMB" = 0 ]; then die "a cap of 0 MB is no cap: give at least 1"; fi
for w in "${WORKLOADS[@]}"; do
  [[ $w =~ ^(mlp|cnn|gpt|resnet):[1-9][0-9]*$ ]] || die "a workload is mlp|cnn|gpt|resnet:STEPS, not '$w'"
done
command -v sqlite3 >/dev/null || die "needs the sqlite3 shell (apt-get install sqlite3)"
[ -x "$B/viewer/devtrace" ] || die "build devtrace first ($B/viewer/devtrace)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta() { sqlite3 "$1" "select coalesce((select value from meta where key='$2'), 0)"; }
# peak DB: the largest size DB and its write-ahead log had together, sampled
# every 0.2 s until $tmp/done exists, into $tmp/peak
peak() {
  local m=0 s
  while [ ! -e "$tmp/done" ]; do
    s=$(($(stat -c %s "$1" 2>/dev/null || echo 0) + $(stat -c %s "$1-wal" 2>/dev/null || echo 0)))
    if [ "$s" -gt "$m" ]; then m=$s; fi
    sleep 0.2
  done
  echo "$m" >"$tmp/peak"
}
# one LABEL CAP DB CMD...: run CMD traced under a cap of CAP MB (0: none) into DB, print a line
one() {
  local label=$1 cap=$2 db=$tmp/$3 s e sampler
  shift 3
  rm -f "$tmp/done"
  peak "$db" &
  sampler=$!
  s=$(date +%s%N)
  "$B/viewer/devtrace" run -q --max-mb "$cap" -o "$db" -- "$@" >/dev/null 2>"$tmp/err" ||
    { touch "$tmp/done"; wait "$sampler"; die "'$*' traced failed: $(tail -3 "$tmp/err")"; }
  e=$(date +%s%N)
  touch "$tmp/done"
  wait "$sampler"
  if [ "$(stat -c %s "$db")" -gt "$(cat "$tmp/peak")" ]; then stat -c %s "$db" >"$tmp/peak"; fi
  [ "$(meta "$db" complete)" = 1 ] || die "the trace of '$*' is not complete"
  printf "  %-27s cap %2s MB: %10d bytes (peak with WAL %10d), %8d events, %8d pruned, %6d ms wall, %4d ms pruning\n" \
    "$label" "$cap" "$(stat -c %s "$db")" "$(cat "$tmp/peak")" "$(meta "$db" events_recorded)" \
    "$(meta "$db" pruned_events)" $(((e - s) / 1000000)) $(($(meta "$db" prune_ns) / 1000000))
}
# flat CAP DB_N DB_10N: how the capped trace grew from N to 10xN steps, against the unbounded one
flat() {
  local cap=$1 n=$tmp/$2 n10=$tmp/$3 u=$tmp/$4
  awk -v a="$(stat -c %s "$n")" -v b="$(stat -c %s "$n10")" -v u="$(stat -c %s "$u")" -v cap="$cap" 'BEGIN {
    printf "  10x the steps: capped %.2f MB -> %.2f MB (x%.2f, %s the cap of %d MB), unbounded %.2f MB (x%.1f of capped)\n",
      a / 1048576, b / 1048576, b / a, b <= cap * 1048576 ? "within" : "OVER", cap, u / 1048576, u / b }'
}
if [ "$CN" -gt 0 ]; then
  [ -x "$B/bench/gen_trace" ] || die "build bench/gen_trace first ($B/bench/gen_trace)"
  echo "== C loop (bench/gen_trace), $CN and $((10 * CN)) steps"
  for run in "0 $((10 * CN))" "$CMB $CN" "$CMB $((10 * CN))"; do
    read -r cap n <<<"$run"
    DEVTRACE_SIM_CUDA=1 one "gen_trace $n" "$cap" "c.$cap.$n.db" "$B/bench/gen_trace" "$n"
  done
  flat "$CMB" "c.$CMB.$CN.db" "c.$CMB.$((10 * CN)).db" "c.0.$((10 * CN)).db"
fi
if [ ${#WORKLOADS[@]} -gt 0 ]; then
  "$PY" -c "import torch" 2>/dev/null || die "needs Debian's python3-torch in $PY"
  for w in "${WORKLOADS[@]}"; do
    name=${w%:*}
    n=${w#*:}
    echo "== PyTorch $name (bench/pytorch_train.py, cpu), $n and $((10 * n)) steps"
    for run in "0 $((10 * n))" "$PMB $n" "$PMB $((10 * n))"; do
      read -r cap s <<<"$run"
      one "pytorch_train.py $name $s" "$cap" "p.$name.$cap.$s.db" "$PY" bench/pytorch_train.py "$name" "$s"
    done
    flat "$PMB" "p.$name.$PMB.$n.db" "p.$name.$PMB.$((10 * n)).db" "p.$name.0.$((10 * n)).db"
  done
fi
