#!/usr/bin/env bash
# The PyTorch recorder's cost on the workloads of bench/pytorch_train.py
# (mlp, cnn, gpt, resnet), in one invocation, never as a timed test:
#   - traced / untraced: the median of the ratios of interleaved pairs (an
#     untraced and a traced run side by side, which goes first alternating:
#     this machine's speed drifts between minutes, a pair shares its minute);
#   - the recorder's cost per recorded op and per event, in us: the median of
#     the pairs' differences of loop time over the ops (rows of the trace's
#     `ops` table) and events (meta events_recorded) of the timed steps;
#   - events, ops and bytes per steady-state step: a traced run of 2N steps
#     against one of N (what warm-up and exit add cancels out);
#   - that traced and untraced runs end with the same loss.
# The loop time is the workload's own (bench/pytorch_train.py prints it),
# without the interpreter's start and the trace's finish. The trace size
# under a cap (DEVTRACE_MAX_MB) after 10x more steps is bench/flight.sh's.
# Each interpreter of DEVTRACE_BENCH_PYTHONS (default: Debian's /usr/bin/python3
# with torch 1.13, and .venv-torch2/bin/python with torch 2.13 where
# scripts/torch2-venv.sh made it) runs every workload, the versions' pairs
# interleaved too, and a last table puts the versions' ratios side by side.
# Usage: bench/pytorch.sh [--sim] [BUILD_DIR] [PAIRS] [WORKLOAD:STEPS...]
#   default: build 7 mlp:400 cnn:60 gpt:12 resnet:20 (2-5 min a version on a shared 2-core machine);
#   --sim: the traced runs on one simulated GPU (DEVTRACE_SIM_CUDA=1), so the
#   ratio includes the simulation's own cost.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "bench/pytorch.sh: $*" >&2; exit 2; }
SIM=0
if [ "${1:-}" = "--sim" ]; then SIM=1; shift; fi
B=${1:-build}
P=${2:-7}
if [ $# -gt 2 ]; then shift 2; else set --; fi
WORKLOADS=(mlp:400 cnn:60 gpt:12 resnet:20)
if [ $# -gt 0 ]; then WORKLOADS=("$@"); fi
if [ -n "${DEVTRACE_BENCH_PYTHONS:-}" ]; then
  read -r -a PYS <<<"$DEVTRACE_BENCH_PYTHONS"
else
  PYS=()
  for p in /usr/bin/python3 .venv-torch2/bin/python; do
    [ -x "$p" ] && "$p" -c "import torch" 2>/dev/null && PYS+=("$p")
  done
fi
DT=$B/viewer/devtrace
[[ $P =~ ^[1-9][0-9]*$ ]] || die "PAIRS must be a positive integer, not '$P'"
for w in "${WORKLOADS[@]}"; do
  [[ $w =~ ^(mlp|cnn|gpt|resnet):[1-9][0-9]*$ ]] || die "a workload is mlp|cnn|gpt|resnet:STEPS, not '$w'"
done
command -v sqlite3 >/dev/null || die "needs the sqlite3 shell (apt-get install sqlite3)"
[ ${#PYS[@]} -gt 0 ] || die "no interpreter imports torch (Debian's python3-torch; scripts/torch2-venv.sh for 2.x; or DEVTRACE_BENCH_PYTHONS)"
VERS=()
for py in "${PYS[@]}"; do
  VERS+=("$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null)") || die "$py cannot import torch"
done
[ -x "$DT" ] || die "build devtrace first ($DT: cmake --build $B --target devtrace-cli devtrace devtrace_torch_probes)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# glibc's malloc moves its mmap threshold as large blocks are freed: a run
# either maps and faults in a convolution's buffers on every call or reuses
# them from the heap (cnn untraced: 58,000 or 136,000 minor faults, run to
# run), whichever way the first frees went; a fixed threshold on both sides
# keeps that out of the ratio. An explicit GLIBC_TUNABLES, even empty, wins.
export GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.mmap_threshold=33554432}

# untraced PYTHON WORKLOAD STEPS / traced PYTHON DB WORKLOAD STEPS: "WALL CPU LOSS" of one run
untraced() { "$1" bench/pytorch_train.py "$2" "$3" || die "untraced $* failed"; }
traced() {
  local py=$1 db=$2
  shift 2
  if [ $SIM = 1 ]; then
    DEVTRACE_SIM_CUDA=1 DEVTRACE_QUIET=1 "$DT" run -q -o "$db" --overwrite -- "$py" bench/pytorch_train.py "$@"
  else
    DEVTRACE_QUIET=1 "$DT" run -q -o "$db" --overwrite -- "$py" bench/pytorch_train.py "$@"
  fi || die "traced $py $* failed (trace $db)"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
meta() { sqlite3 "$1" "select coalesce((select value from meta where key = '$2'), 0)"; }
ops() { sqlite3 "$1" "select count(*) from ops"; }
# column EXPR / range EXPR: the median / "MIN MAX" over the pairs (in $pairs) of
# the awk expression EXPR of $1 to $4 (untraced wall, CPU, traced wall, CPU seconds)
column() { awk "{ print $1 }" "$pairs" | median; }
range() { awk "{ print $1 }" "$pairs" | sort -g | sed -n '1p;$p' | paste -sd' '; }

echo "== bench/pytorch.sh on $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
for k in "${!PYS[@]}"; do
  echo "   torch ${VERS[$k]}: ${PYS[$k]} ($("${PYS[$k]}" -V))"
done
dev=$("${PYS[0]}" -c 'import torch; print("cuda" if torch.cuda.is_available() else "the cpu")')
echo "   GLIBC_TUNABLES=$GLIBC_TUNABLES on both sides; traced on $([ $SIM = 1 ] && echo "one simulated GPU (DEVTRACE_SIM_CUDA=1)" || echo "$dev"), untraced on $dev;" \
  "$P interleaved pairs a workload; times are the training loop's own"
: >"$tmp/summary"
for w in "${WORKLOADS[@]}"; do
  name=${w%:*}
  n=${w#*:}
  for k in "${!PYS[@]}"; do : >"$tmp/pairs.$k"; done
  for i in $(seq "$P"); do
    for k in "${!PYS[@]}"; do
      py=${PYS[$k]}
      if [ $((i % 2)) = 1 ]; then
        u=$(untraced "$py" "$name" "$n")
        t=$(traced "$py" "$tmp/n.$k.db" "$name" "$n")
      else
        t=$(traced "$py" "$tmp/n.$k.db" "$name" "$n")
        u=$(untraced "$py" "$name" "$n")
      fi
      read -r uw uc ul <<<"$u"
      read -r tw tc tl <<<"$t"
      [ "$ul" = "$tl" ] || die "$name on torch ${VERS[$k]}: the traced run ended with loss $tl, the untraced one with $ul"
      echo "$uw $uc $tw $tc" >>"$tmp/pairs.$k"
    done
  done
  for k in "${!PYS[@]}"; do
    pairs=$tmp/pairs.$k
    traced "${PYS[$k]}" "$tmp/2n.$k.db" "$name" $((2 * n)) >/dev/null
    ev1=$(meta "$tmp/n.$k.db" events_recorded)
    ev2=$(meta "$tmp/2n.$k.db" events_recorded)
    op1=$(ops "$tmp/n.$k.db")
    op2=$(ops "$tmp/2n.$k.db")
    sz1=$(stat -c %s "$tmp/n.$k.db")
    sz2=$(stat -c %s "$tmp/2n.$k.db")
    lost=$(($(meta "$tmp/n.$k.db" events_dropped) + $(meta "$tmp/2n.$k.db" events_dropped)))
    # shellcheck disable=SC2016 # awk's fields, not the shell's
    awk -v name="$name" -v ver="${VERS[$k]}" -v n="$n" -v p="$P" -v lost="$lost" -v summary="$tmp/summary" \
      -v uw="$(column '$1')" -v uc="$(column '$2')" -v tw="$(column '$3')" -v tc="$(column '$4')" \
      -v rw="$(column '$3 / $1')" -v rc="$(column '$4 / $2')" -v rwr="$(range '$3 / $1')" -v rcr="$(range '$4 / $2')" \
      -v dw="$(column '$3 - $1')" -v dc="$(column '$4 - $2')" \
      -v ev1="$ev1" -v ev2="$ev2" -v op1="$op1" -v op2="$op2" -v sz1="$sz1" -v sz2="$sz2" 'BEGIN {
        evs = (ev2 - ev1) / n; ops = (op2 - op1) / n; bytes = (sz2 - sz1) / n
        split(rwr, a, " "); split(rcr, b, " ")
        printf "%s, %d steps, torch %s, medians of %d pairs:\n", name, n, ver, p
        printf "  traced / untraced: wall %.3f (pairs %.3f to %.3f), CPU %.3f (%.3f to %.3f)\n", rw, a[1], a[2], rc, b[1], b[2]
        printf "  untraced %.3f s wall, %.3f s CPU; traced %.3f s wall, %.3f s CPU\n", uw, uc, tw, tc
        printf "  per steady-state step: %.1f events, %.1f recorded ops, %.0f bytes of trace (%d and %d steps: %d and %d events, %d and %d bytes)\n",
          evs, ops, bytes, n, 2 * n, ev1, ev2, sz1, sz2
        if (ops > 0)
          printf "  recorder cost per recorded op: %.1f us of wall time, %.1f us of CPU; per event: %.2f / %.2f us\n",
            dw * 1e6 / (ops * n), dc * 1e6 / (ops * n), dw * 1e6 / (evs * n), dc * 1e6 / (evs * n)
        printf "  same loss traced and untraced in every pair; events lost: %d\n", lost
        printf "| %s (%d) | %s | %.3f | %.3f | %.1f ms | %.1f, %.1f |\n", name, n, ver, rw, rc, uc * 1000 / n, evs, ops >>summary
      }'
  done
done
echo "== side by side (medians of $P pairs; the untraced loop's CPU time a step; events and recorded ops a step)"
echo "| workload (steps) | torch | traced / untraced, wall | traced / untraced, CPU | untraced, CPU a step | events, ops |"
echo "|---|---|---|---|---|---|"
cat "$tmp/summary"
echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
