#!/usr/bin/env bash
# Fuzzes the viewer: every reading command on mutated traces (fuzz_viewer),
# and `fix` and `fix --verify` with the command runner stubbed (fuzz_fix: it
# aborts if --verify would run anything without the user's say), under
# libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer (clang,
# UB fatal: -fno-sanitize-recover=all). A PyTorch trace joins the seeds where
# torch and the adapter are there. Seeds are real traces made now by
# the build in BUILD_DIR (a runtime mismatch, a checkpoint resume, a plain
# field, a fixed run, CUDA runtime calls on the fake libcudart, C++ throws).
# First every input under tests/viewer/fuzz/regressions/ (crashes and hangs found
# before) must read cleanly; then SECONDS of fuzzing. A crash, leak or hang
# (an input taking over 20 s) leaves its input in build-fuzz/ and exits 1:
# add the trace file to tests/viewer/fuzz/regressions/ with the fix (for an input of
# the SQL mode, DEVTRACE_FUZZ_KEEP=FILE build-fuzz/fuzz_viewer INPUT with
# DEVTRACE_FUZZ_SEEDS=build-fuzz/seeds keeps the edited trace as FILE).
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]   (defaults: 120, build)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-120}
B=${2:-build}
F=build-fuzz
mkdir -p $F
command -v clang >/dev/null || { echo "fuzz: needs clang (scripts/install-deps.sh --tests installs it)" >&2; exit 2; }
[ -x $B/viewer/devtrace ] || { echo "fuzz: build $B first (cmake -S . -B $B && cmake --build $B)" >&2; exit 2; }

echo "== fuzz: building the harnesses (clang, libFuzzer + ASan + UBSan): fuzz_viewer, and fuzz_fix (fix, fix --verify)"
srcs="viewer/model.c viewer/facts.c viewer/rules/*.c viewer/code.c viewer/words.c viewer/validate.c viewer/files.c viewer/source.c viewer/fix.c viewer/report.c
  viewer/browse.c viewer/export.c viewer/sym.c viewer/trace.c viewer/escape.c viewer/cleanup.c common/trace_schema.c"
# the two harnesses at once where there are two cores (each is one clang process)
par=$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)
build_harness() {
  # shellcheck disable=SC2046,SC2086
  clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -fno-omit-frame-pointer -Wall -Wextra -Iviewer -Iinclude -Icommon $([ $1 = fix ] && echo -DDEVTRACE_FUZZ_FIX) \
    tests/viewer/fuzz/fuzz_viewer.c $srcs $(pkg-config --cflags --libs sqlite3 libdw libmd) -ldl -o $F/fuzz_$1
}
if [ $par = 1 ]; then
  build_harness viewer & pv=$!
  build_harness fix & pf=$!
  wait $pv && wait $pf || { echo "fuzz: a harness did not build" >&2; exit 1; }
else
  build_harness viewer && build_harness fix
fi

echo "== fuzz: seeds (real traces)"
seeds=$F/seeds
rm -rf $seeds && mkdir -p $seeds
run() { local name=$1; shift; "$B/viewer/devtrace" run -o "$seeds/$name.db" -- "$@" >/dev/null 2>&1 || true; }
export DEVTRACE_SIM_CUDA=2
run mismatch $B/examples/mismatch_minimal
run fixed $B/examples/mismatch_minimal --fixed
run resume $B/examples/bug_resume_checkpoint
run plain_field $B/examples/bug_plain_field
run roundtrip $B/examples/bug_cpu_roundtrip
LD_LIBRARY_PATH=$B/tests/fakecuda run cuda $B/tests/cuda_user
LD_LIBRARY_PATH=$B/tests/fakecuda run cuda_ops $B/tests/cuda_user runtime 3
run throw $B/tests/throw_target
# a PyTorch trace, where torch and the adapter are there: the one kind fix --verify goes on to run
if [ -d $B/adapters/pytorch ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  run pytorch /usr/bin/python3 examples/pytorch/bug_labels_not_moved.py
fi
rm -f $seeds/*-wal $seeds/*-shm
ls $seeds

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
if compgen -G "tests/viewer/fuzz/regressions/*" >/dev/null; then
  echo "== fuzz: the regression inputs (trace files)"
  for target in viewer fix; do
    $F/fuzz_$target -timeout=20 tests/viewer/fuzz/regressions/* 2>$F/regressions-$target.log ||
      { tail -40 $F/regressions-$target.log; echo "fuzz: a regression input fails again ($target)" >&2; exit 1; }
  done
fi
# fuzz TARGET MODE SECONDS: a bounded run; a failure leaves its input in $F/
fuzz() {
  local target=$1 mode=$2 t=$3 log=$F/fuzz-$1-$2.log
  echo "== fuzz: $target, $mode, $t s"
  mkdir -p $F/corpus-$target-$mode
  if [ "$mode" = sql ]; then
    # inputs are edit lists; a few hand-made ones start it (seed, then records)
    printf '\x00' > $F/corpus-$target-$mode/start0
    printf '\x01\x05\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f' > $F/corpus-$target-$mode/start1
    export DEVTRACE_FUZZ_SEEDS=$seeds
  else
    unset DEVTRACE_FUZZ_SEEDS
  fi
  if ! $F/fuzz_$target -max_total_time="$t" -timeout=20 -rss_limit_mb=2560 -max_len=1048576 \
      -artifact_prefix=$F/$target-$mode- -print_final_stats=1 $F/corpus-$target-$mode $([ "$mode" = raw ] && echo $seeds) \
      2>$log; then
    grep -A30 -m1 'ERROR\|runtime error\|timeout\|deadly signal' $log || tail -40 $log
    echo "fuzz: found a failure; its input is in $F/ ($target-$mode-crash-*, -leak-*, -timeout-*)" >&2
    exit 1
  fi
  echo "  $(grep -E '^stat::number_of_executed_units' $log | awk '{print $2}') inputs, $(grep -E '^stat::new_units_added' $log | awk '{print $2}') new"
}
# the viewer's reading commands get half the time, fix and fix --verify the rest; with two cores the two
# harnesses fuzz side by side (the same fuzzing, in half the wall time)
v=$(( secs / 2 )); x=$(( secs - secs / 2 ))
fuzz_viewer() { fuzz viewer sql $(( v * 2 / 3 )) && fuzz viewer raw $(( v - v * 2 / 3 )); }
fuzz_fix() { fuzz fix sql $(( x * 2 / 3 )) && fuzz fix raw $(( x - x * 2 / 3 )); }
if [ $par = 1 ]; then
  # each side's output kept apart and printed whole when it ends
  (fuzz_viewer) >$F/side-viewer.out 2>&1 & pv=$!
  (fuzz_fix) >$F/side-fix.out 2>&1 & pf=$!
  sv=0 sf=0
  wait $pv || sv=$?
  wait $pf || sf=$?
  cat $F/side-viewer.out $F/side-fix.out
  [ $sv = 0 ] && [ $sf = 0 ] || exit 1
else
  fuzz_viewer && fuzz_fix || exit 1
fi
echo "fuzz: no failure"
