#!/bin/sh
# Every C bug example's suggested patch (and mismatch_minimal's), end to end: traced on two simulated GPUs,
# `devtrace fix` writes its patch (from the source tree, so the patch names examples/FILE), applied with patch -p0 to a
# copy of examples/, compiled against libdtrt with the flags of examples/CMakeLists.txt, and run on the
# same simulated GPUs: it must exit 0 without a device mismatch. The examples listed in
# tests/viewer/data/c_fix_examples.txt must pass; every other one is counted and named ("no patch" or "still
# fails"), and a patch that is given but does not apply or build fails the test whatever the list says.
# usage: c_fix_examples.sh DEVTRACE BUILD_DIR SOURCE_DIR WORK_DIR
set -u
if [ $# -ne 4 ]; then
    echo "usage: $0 DEVTRACE BUILD_DIR SOURCE_DIR WORK_DIR" >&2
    exit 2
fi
dt=$1 build=$2 src=$3 work=$4
cc=${CC:-cc}
list="$src/tests/viewer/data/c_fix_examples.txt"
[ -x "$dt" ] && [ -d "$build/examples" ] && [ -f "$list" ] || {
    echo "c_fix_examples: missing $dt, $build/examples or $list" >&2
    exit 2
}
rm -rf "$work" && mkdir -p "$work" || exit 2
pass=0 total=0 bad=0
for c in "$src"/examples/mismatch_minimal.c "$src"/examples/bug_*.c; do
    ex=$(basename "$c" .c)
    total=$((total + 1))
    expect=no
    grep -qx "$ex" "$list" && expect=yes
    w="$work/$ex"
    mkdir -p "$w"
    DEVTRACE_SIM_CUDA=2 "$dt" run -o "$w/trace.db" "$build/examples/$ex" >"$w/run.out" 2>&1
    if ! (cd "$src" && "$dt" fix -o "$w/fix.patch" "$w/trace.db") >"$w/fix.out" 2>&1; then
        result="no patch: $(tail -n 1 "$w/fix.out")"
    elif ! cp -r "$src/examples" "$w/" || ! (cd "$w" && patch -p0 --batch --quiet <fix.patch) >"$w/patch.out" 2>&1; then
        result="PATCH DOES NOT APPLY"
        bad=1
    elif ! "$cc" -D_GNU_SOURCE -I"$src/include" -O2 -g -DNDEBUG -Wall -Wextra -std=c11 "$w/examples/$ex.c" \
        -o "$w/$ex" -Wl,-rpath,"$build/runtime" "$build/runtime/libdtrt.so" >"$w/cc.out" 2>&1; then
        result="PATCHED PROGRAM DOES NOT BUILD: $(head -n 1 "$w/cc.out")"
        bad=1
    elif ! DEVTRACE_SIM_CUDA=2 "$w/$ex" >"$w/fixed.out" 2>&1; then
        result="still fails: $(grep -m 1 -i 'error' "$w/fixed.out")"
    else
        result="pass"
        pass=$((pass + 1))
    fi
    printf '%-28s %s\n' "$ex" "$result"
    if [ "$expect" = yes ] && [ "$result" != pass ]; then
        echo "  ^ listed in tests/viewer/data/c_fix_examples.txt as passing" >&2
        bad=1
    fi
done
echo "c_fix_examples: $pass of $total C examples (mismatch_minimal and bug_*) run without a device mismatch after their one patch"
exit $bad
