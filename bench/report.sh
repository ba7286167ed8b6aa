#!/usr/bin/env bash
# devtrace report on a long trace (target: 10 million events in <= 2 s):
# bench/gen_trace makes it under the tracer (a loop of small ops on a
# simulated GPU, then a tensor left on the cpu meets a GPU tensor), then
# `devtrace report` (text and --json) is timed on it, best of 3.
# Usage: bench/report.sh [BUILD_DIR] [ITERATIONS]  (default build, 1700000:
# 6 events each, ~10.2 M events; the trace takes ~30 s to make)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
N=${2:-1700000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DEVTRACE_SIM_CUDA=1 DEVTRACE_QUIET=1 DEVTRACE_RING_KB=262144 DEVTRACE_OUTPUT=$tmp/long.db \
  LD_PRELOAD=$B/tracer/libdevtrace.so $B/bench/gen_trace "$N" >/dev/null
ev=$(sqlite3 $tmp/long.db "select value from meta where key='events_recorded'")
dr=$(sqlite3 $tmp/long.db "select value from meta where key='events_dropped'")
sz=$(stat -c %s $tmp/long.db)
echo "== devtrace report on a trace of $ev events ($dr dropped), $sz bytes ($(echo "scale=1; $sz / $ev" | bc) bytes/event)"
best() { sort -n | head -1; }
for mode in "" "--json"; do
  t=$(for i in 1 2 3; do
        s=$(date +%s%N); $B/viewer/devtrace report $mode $tmp/long.db >$tmp/out$mode || [ $? -eq 1 ]; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
      done | best)
  echo "  report $mode: $t ms (best of 3)"
done
grep -q 'fix: move "labels" to cuda:0 right after it is made, after .*gen_trace.c' $tmp/out \
  && echo "  the report names the fix" || echo "  REPORT WRONG: $(tail -3 $tmp/out)"
for cmd in "tensors --alive-at-error" "transfers" "show" ; do
  s=$(date +%s%N)
  case $cmd in
    show) $B/viewer/devtrace show $tmp/long.db labels >/dev/null ;;
    *) $B/viewer/devtrace $cmd $tmp/long.db >/dev/null ;;
  esac
  e=$(date +%s%N)
  echo "  $cmd: $(( (e - s) / 1000000 )) ms"
done
