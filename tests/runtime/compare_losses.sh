#!/bin/sh
# Runs a training example on the cpu and on a simulated GPU: both must reach
# their loss threshold (exit 0) and print the same loss curve within a
# relative tolerance.   usage: compare_losses.sh EXAMPLE [ARGS...]
set -u
ex=$1
shift
out_cpu=$(DEVTRACE_SIM_CUDA=1 "$ex" --device cpu "$@") || { echo "$out_cpu"; echo "FAIL: cpu run exited $?"; exit 1; }
out_gpu=$(DEVTRACE_SIM_CUDA=1 "$ex" --device cuda:0 "$@") || { echo "$out_gpu"; echo "FAIL: cuda:0 run exited $?"; exit 1; }
echo "$out_cpu" | grep -q '^device: cpu' || { echo "FAIL: first run not on the cpu"; exit 1; }
echo "$out_gpu" | grep -q '^device: cuda:0 (cuda' || { echo "FAIL: second run not on cuda:0"; exit 1; }
printf '%s\n' "$out_cpu" | grep '^epoch' > /tmp/cmp_cpu.$$
printf '%s\n' "$out_gpu" | grep '^epoch' > /tmp/cmp_gpu.$$
paste /tmp/cmp_cpu.$$ /tmp/cmp_gpu.$$ | awk '
  { n++; a = $4; b = $8; d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a
    printf "epoch %s  cpu %s  cuda:0 %s\n", $2, a, b
    if (d > 1e-4 * (1 + m)) bad = 1 }
  END { if (n == 0) { print "FAIL: no epoch lines"; exit 1 }
        if (bad) { print "FAIL: loss curves differ"; exit 1 }
        print "loss curves match over " n " epochs" }'
rc=$?
rm -f /tmp/cmp_cpu.$$ /tmp/cmp_gpu.$$
exit $rc
