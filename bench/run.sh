#!/usr/bin/env bash
# Tracer benchmarks, measured as ratios against untraced runs in the same
# invocation (never as timed assertions in tests):
#   producer cost per event with a ~20-frame stack (target <= 300 ns),
#   writer throughput (target >= 2 M events/s, from the writer's own busy time),
#   bytes per event in the finished trace (target <= 40),
#   the workload traced over untraced wall time (target <= 1.05),
#   the fixed cost of starting and finishing a trace,
#   the cost the CUDA runtime wrappers add per call, and CUPTI's (on the tests' fakes):
#     untraced, traced by default (launches and frees counted) and with
#     DEVTRACE_CUDA_ACTIVITY=1 (launches, frees and activity records recorded),
#   an op storm on 1 and 8 threads: events lost (goal 0) and traced/untraced,
# Usage: bench/run.sh [BUILD_DIR] [cuda]   (default: build; `cuda`: the CUDA sections only)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
ONLY=${2:-}
case "$ONLY" in ""|cuda) ;; *) echo "usage: bench/run.sh [BUILD_DIR] [cuda]" >&2; exit 2 ;; esac
[ -f "$B/tracer/libdevtrace.so" ] || { echo "bench: no $B/tracer/libdevtrace.so: build the project first" >&2; exit 2; }
LIB=$B/tracer/libdevtrace.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v sqlite3 >/dev/null || { echo "bench: needs the sqlite3 shell (apt-get install sqlite3)" >&2; exit 2; }

best() { sort -n | head -1; }
# wall [VAR=VALUE...] -- CMD ARGS...: microseconds CMD took, run with those
# variables in its environment. Both runs are one fork and one exec of CMD:
# env(1) in front of the traced one only would add its own exec (~1 ms here)
# to the tracer's account.
wall() {
  local s e vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  s=$(date +%s%N)
  (for v in "${vars[@]}"; do export "$v"; done; exec "$@") >/dev/null
  e=$(date +%s%N)
  echo $(( (e - s) / 1000 ))
}

ratio() { echo "scale=2; $1 / $2" | bc; }
# cuda_cost DIR PROG MODE [VAR=VALUE...]: best of 5 ns/call of PROG MODE on the fakes in DIR
cuda_cost() {
  local dir=$1 prog=$2 mode=$3 i; shift 3
  for i in 1 2 3 4 5; do
    (for v in "$@"; do export "$v"; done; DEVTRACE_OUTPUT=$tmp/k$mode$i.db DEVTRACE_OVERWRITE=1 LD_LIBRARY_PATH=$dir \
      $B/bench/$prog $mode 100000) | awk '{print $2}'
  done | best
}
traced=(DEVTRACE_QUIET=1 DEVTRACE_RING_KB=524288 LD_PRELOAD=$LIB)
activity=(DEVTRACE_CUDA_ACTIVITY=1)

echo "== interposition: ns per CUDA runtime call (fake libcudart, 20-frame stack), best of 5"
echo "   default: copies and allocations recorded, launches and frees counted; activity: DEVTRACE_CUDA_ACTIVITY=1"
for mode in memcpy launch malloc; do
  base=$(cuda_cost $B/tests/fakecuda bench_cuda $mode)
  def=$(cuda_cost $B/tests/fakecuda bench_cuda $mode "${traced[@]}")
  act=$(cuda_cost $B/tests/fakecuda bench_cuda $mode "${traced[@]}" "${activity[@]}")
  echo "  $mode: untraced $base ns; default $def ns (x$(ratio $def $base), +$(echo "$def - $base" | bc) ns); activity $act ns (x$(ratio $act $base), +$(echo "$act - $base" | bc) ns)"
done

if [ -x $B/bench/bench_cuda_static ]; then
  F=$B/tests/fakecupti
  echo "== CUPTI: ns per CUDA call (fake driver and libcupti, 20-frame stack), best of 5"
  echo "   static cudart: only CUPTI sees the call (a runtime callback with a stack, its driver call skipped;"
  echo "   by default no launch callback at all, with activity on an activity record per call too)"
  for mode in memcpy launch malloc; do
    base=$(cuda_cost $F bench_cuda_static $mode)
    def=$(cuda_cost $F bench_cuda_static $mode "${traced[@]}" CUDA_INJECTION64_PATH=$LIB)
    act=$(cuda_cost $F bench_cuda_static $mode "${traced[@]}" CUDA_INJECTION64_PATH=$LIB "${activity[@]}")
    off=$(cuda_cost $F bench_cuda_static $mode "${traced[@]}" DEVTRACE_CUPTI=0)
    echo "  $mode: untraced $base ns; default $def ns (x$(ratio $def $base)); activity $act ns (x$(ratio $act $base)); DEVTRACE_CUPTI=0 (nothing recorded) $off ns"
  done
  echo "   shared cudart on the same driver: the wrappers record the call, CUPTI only skips it (and adds its activity)"
  for mode in memcpy launch malloc; do
    base=$(cuda_cost $F bench_cuda_drv $mode)
    def=$(cuda_cost $F bench_cuda_drv $mode "${traced[@]}" CUDA_INJECTION64_PATH=$LIB)
    act=$(cuda_cost $F bench_cuda_drv $mode "${traced[@]}" CUDA_INJECTION64_PATH=$LIB "${activity[@]}")
    off=$(cuda_cost $F bench_cuda_drv $mode "${traced[@]}" DEVTRACE_CUPTI=0)
    echo "  $mode: untraced $base ns; default $def ns (x$(ratio $def $base)); activity $act ns (x$(ratio $act $base)); wrappers alone (DEVTRACE_CUPTI=0) $off ns"
  done
fi
[ "$ONLY" = cuda ] && exit 0

echo "== producer: ns per probe call (20-frame stack; op: an op, its output, its end, a free), best of 5"
for probe in freed created op; do
  base=$(for i in 1 2 3 4 5; do $B/bench/bench_probe $probe 200000 | awk '{print $2}'; done | best)
  traced=$(for i in 1 2 3 4 5; do DEVTRACE_QUIET=1 DEVTRACE_RING_KB=524288 DEVTRACE_OUTPUT=$tmp/p$probe$i.db LD_PRELOAD=$LIB \
            $B/bench/bench_probe $probe 200000 | awk '{print $2}'; done | best)
  drop=$(sqlite3 $tmp/p${probe}1.db "select value from meta where key='events_dropped'")
  echo "  $probe: untraced $base ns, traced $traced ns, producer cost $(echo "$traced - $base" | bc) ns (dropped $drop)"
done

echo "== writer: events per second of the writer thread's CPU time, best of 3"
# rate DB: "EVENTS BUSY_NS RATE" of a finished trace
rate() {
  sqlite3 -separator ' ' "$1" "select (select value from meta where key='events_recorded'),
    (select value from meta where key='writer_busy_ns'),
    printf('%.2f', (select value from meta where key='events_recorded') * 1e3 / (select value from meta where key='writer_busy_ns'))"
}
for i in 1 2 3; do
  DEVTRACE_QUIET=1 DEVTRACE_RING_KB=524288 DEVTRACE_OUTPUT=$tmp/w$i.db LD_PRELOAD=$LIB $B/bench/bench_probe created 1000000 >/dev/null
  rate $tmp/w$i.db
done | sort -k3 -n | tail -1 | while read -r ev ns r; do
  echo "  burst of bare tensor creations: $ev events in $(echo "scale=3; $ns / 1000000000" | bc) s of writer time: $r M events/s"
done

echo "== op storm: tiny ops as fast as the threads can (bench/op_storm), lossless (the default), best of 3"
# Writer-bound by design: the producers make events faster than any writer
# stores them, so the ratio is the writer's rate; the point is the loss (0).
for spec in "1 2000000" "8 250000"; do
  set -- $spec
  u=$(for i in 1 2 3; do wall -- $B/bench/op_storm "$1" "$2"; done | best)
  t=$(for i in 1 2 3; do wall DEVTRACE_QUIET=1 DEVTRACE_OUTPUT=$tmp/storm$1.$i.db LD_PRELOAD=$LIB -- $B/bench/op_storm "$1" "$2"; done | best)
  read -r rec lost waits wait_ns < <(sqlite3 -separator ' ' $tmp/storm$1.1.db "select
    (select value from meta where key='events_recorded'), (select value from meta where key='events_dropped'),
    (select value from meta where key='ring_waits'), (select value from meta where key='ring_wait_ns')")
  echo "  $1 thread(s) x $2 ops: untraced $((u / 1000)) ms, traced $((t / 1000)) ms, ratio $(echo "scale=2; $t / $u" | bc) (writer-bound); $rec events, lost $lost; the producers waited $waits times, $((wait_ns / 1000000)) ms in all"
  DEVTRACE_QUIET=1 DEVTRACE_LOSSY=1 DEVTRACE_OUTPUT=$tmp/lossy$1.db LD_PRELOAD=$LIB $B/bench/op_storm "$1" "$2" >/dev/null
  echo "    DEVTRACE_LOSSY=1 for comparison: lost $(sqlite3 $tmp/lossy$1.db "select value from meta where key='events_dropped'") of $(sqlite3 $tmp/lossy$1.db "select (select value from meta where key='events_dropped') + (select value from meta where key='events_recorded')")"
done

W=$B/examples/mlp_train
# 15 pairs: a single run here is 0-20% slower than the quietest for reasons
# of the machine's (traced or not, the same program's CPU time varies that
# much), and the best of each side is only a fair pair when both had quiet
# runs among theirs; with 9, a noisy stretch sometimes left one side none.
NW=15
echo "== workload: traced / untraced wall time (examples/mlp_train, simulated GPU), interleaved, best of $NW"
export DEVTRACE_SIM_CUDA=1
# interleaved N ARGS...: N untraced and N traced runs of $W ARGS, alternating;
# sets u and t to the best wall time of each, in microseconds, and m to the
# median of the N traced/untraced ratios of runs made side by side (this
# machine's speed drifts between minutes: a pair shares its minute)
interleaved() {
  local n=$1 i; shift
  : > $tmp/u; : > $tmp/t; : > $tmp/r
  for i in $(seq "$n"); do
    wall -- $W "$@" >> $tmp/u
    wall DEVTRACE_QUIET=1 DEVTRACE_OUTPUT=$tmp/run$i.db DEVTRACE_OVERWRITE=1 LD_PRELOAD=$LIB -- $W "$@" >> $tmp/t
    echo "scale=3; $(tail -1 $tmp/t) / $(tail -1 $tmp/u)" | bc >> $tmp/r
  done
  u=$(best < $tmp/u); t=$(best < $tmp/t); m=$(sort -n $tmp/r | sed -n "$(( (n + 1) / 2 ))p")
}
interleaved $NW
echo "  untraced $((u / 1000)) ms, traced $((t / 1000)) ms, ratio $(echo "scale=3; $t / $u" | bc) (median of the $NW pairs' ratios: $m)"
lu=$($W); lt=$(DEVTRACE_QUIET=1 DEVTRACE_OUTPUT=$tmp/same.db LD_PRELOAD=$LIB $W)
[ "$lu" = "$lt" ] && echo "  same result traced and untraced: $(echo "$lu" | tail -1)" || echo "  RESULT CHANGED: '$lu' vs '$lt'"

echo "== fixed cost: start and finish of a trace (mlp_train --epochs 0: ~60 events), interleaved, best of 7"
interleaved 7 --epochs 0
echo "  untraced $((u / 1000)).$(( (u % 1000) / 100 )) ms, traced $((t / 1000)).$(( (t % 1000) / 100 )) ms: $(( (t - u) / 1000 )).$(( ((t - u) % 1000) / 100 )) ms added"

echo "== bytes per event in the finished trace, and the writer on this mix (mlp_train, 16 epochs; best of 3)"
for i in 1 2 3; do
  DEVTRACE_QUIET=1 DEVTRACE_OUTPUT=$tmp/big$i.db LD_PRELOAD=$LIB $W --epochs 16 >/dev/null
  echo "$(rate $tmp/big$i.db) $(stat -c %s $tmp/big$i.db)"
done | sort -k3 -n | tail -1 | while read -r ev ns r sz; do
  echo "  writer on this mix: $r M events/s of writer CPU time"
  echo "  $ev events, $sz bytes: $(echo "scale=1; $sz / $ev" | bc) bytes/event"
done
