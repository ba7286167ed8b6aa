#!/bin/sh
# The libtorch bug programs of tests/adapters/libtorch_bugs/ (pytorch/examples' cpp/ shapes, the meta device standing
# in for a GPU), end to end: each traced with the libtorch observer, `devtrace fix` writes its patch (from
# the source tree, so it names tests/adapters/libtorch_bugs/FILE), applied with patch -p0 to a copy, the copies
# compiled in one CMake project with the flags the build used but -g (tests/adapters/libtorch_bugs/programs.cmake,
# -j2), and run: the report must give the rule the program's header names (// rule: <id>); each must exit 0
# without a device mismatch, but those listed in tests/adapters/data/libtorch_fix_compile_only.txt,
# whose fix libtorch 1.13 cannot run on the meta device (Module::to), which must only compile. A program
# without a patch, a patch that does not apply or a copy that does not build fails the test.
# usage: libtorch_fix.sh DEVTRACE BUILD_DIR SOURCE_DIR WORK_DIR TORCH_DIR [BUILD_TYPE]
set -u
if [ $# -ne 5 ] && [ $# -ne 6 ]; then
    echo "usage: $0 DEVTRACE BUILD_DIR SOURCE_DIR WORK_DIR TORCH_DIR [BUILD_TYPE]" >&2
    exit 2
fi
dt=$1 build=$2 src=$3 work=$4 torch_dir=$5 type=${6:-RelWithDebInfo}
list="$src/tests/adapters/data/libtorch_fix_compile_only.txt"
[ -x "$dt" ] && [ -f "$list" ] && [ -f "$src/tests/adapters/libtorch_bugs/programs.cmake" ] || {
    echo "libtorch_fix: missing $dt, $list or tests/adapters/libtorch_bugs/programs.cmake" >&2
    exit 2
}
rm -rf "$work" && mkdir -p "$work/tests/adapters" || exit 2
cp -r "$src/tests/adapters/libtorch_bugs" "$work/tests/adapters/" || exit 2
bugs=$(sed -n 's/^set(DT_LIBTORCH_BUGS \(.*\))$/\1/p' "$src/tests/adapters/libtorch_bugs/programs.cmake")
[ -n "$bugs" ] || { echo "libtorch_fix: no DT_LIBTORCH_BUGS in programs.cmake" >&2; exit 2; }
bad=0
for b in $bugs; do
    prog="$build/tests/libtorch_bug_$b"
    if "$prog" >"$work/$b.plain" 2>&1 || ! grep -q "found at least two devices" "$work/$b.plain"; then
        echo "$b: the program does not fail with a device mismatch untraced" >&2
        : >"$work/$b.unpatched"
        bad=1
        continue
    fi
    DEVTRACE_QUIET=1 "$dt" run -o "$work/$b.db" -- "$prog" >"$work/$b.run" 2>&1
    # the rule its header names (// rule: <id>) is the one the report gives
    want=$(sed -n 's|^// rule: \([a-z-]*\)$|\1|p' "$src/tests/adapters/libtorch_bugs/$b.cc")
    got=$("$dt" report --json "$work/$b.db" 2>/dev/null | python3 -c 'import json, sys
m = [x for t in json.load(sys.stdin)["traces"] for x in t["mismatches"]]
print((m[0].get("fix") or {}).get("rule") or "none" if m else "no mismatch")' 2>&1)
    if [ -z "$want" ] || [ "$got" != "$want" ]; then
        echo "$b: RULE: the report gives ${got:-nothing}, the program's header names ${want:-no rule}"
        bad=1
    fi
    if ! (cd "$src" && "$dt" fix -o "$work/$b.patch" "$work/$b.db") >"$work/$b.fix" 2>&1 &&
        [ ! -s "$work/$b.patch" ]; then
        echo "$b: no patch: $(tail -n 1 "$work/$b.fix")"
        : >"$work/$b.unpatched"
        bad=1
    elif ! (cd "$work" && patch -p0 --batch --quiet <"$b.patch") >"$work/$b.patch.out" 2>&1; then
        echo "$b: PATCH DOES NOT APPLY: $(head -n 1 "$work/$b.patch.out")"
        : >"$work/$b.unpatched"
        bad=1
    fi
done
# the copies, patched, in one project with the build's flags
cat >"$work/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.16)
project(libtorch_fix CXX)
find_package(Torch CONFIG REQUIRED)
include(tests/adapters/libtorch_bugs/programs.cmake)
foreach(bug \${DT_LIBTORCH_BUGS})
  dt_libtorch_program(\${bug} tests/adapters/libtorch_bugs/\${bug}.cc)
endforeach()
EOT
if ! cmake -G "Unix Makefiles" -S "$work" -B "$work/build" -DCMAKE_BUILD_TYPE="$type" -DTorch_DIR="$torch_dir" -DDT_LIBTORCH_NO_DEBUG_INFO=ON >"$work/cmake.out" 2>&1; then
    echo "libtorch_fix: the copies' project does not configure: $(tail -n 3 "$work/cmake.out")" >&2
    exit 1
fi
# make -k: every copy that builds is built, and run
cmake --build "$work/build" -j2 -- -k >"$work/build.out" 2>&1
pass=0 built=0 total=0
for b in $bugs; do
    total=$((total + 1))
    if [ -e "$work/$b.unpatched" ]; then
        result="not patched"
    elif [ ! -x "$work/build/$b" ]; then
        result="PATCHED PROGRAM DOES NOT BUILD: $(grep -m 1 'error:' "$work/build.out")"
        bad=1
    elif grep -qx "$b" "$list"; then
        result="builds (not run: its fix cannot run on the meta device)"
        built=$((built + 1))
    elif ! "$work/build/$b" >"$work/$b.fixed" 2>&1; then
        result="still fails: $(grep -m 1 'what()' "$work/$b.fixed")"
        bad=1
    else
        result="pass"
        pass=$((pass + 1))
    fi
    printf '%-18s %s\n' "$b" "$result"
done
echo "libtorch_fix: $pass of $total libtorch programs run without a device mismatch after their one patch; $built more build with it"
exit $bad
