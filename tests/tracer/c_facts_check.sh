#!/bin/sh
# The source facts the tracer writes for a C program at its first device mismatch (tracer/front/cfacts.c), on
# tests/tracer/c_facts_target.c traced on a simulated GPU: facts from DWARF (a multi-declarator's names, a device
# variable, a module's and an optimizer's locals), a struct field assigned, from the text (a statement over two lines, a loop, a move and its wrapper, a call's
# arguments), none for system headers, none with DEVTRACE_C_FACTS=0; then the C patch `devtrace fix`
# writes from them, and --verify refusing a compiled program in one line; for tests/tracer/c_facts_target.cc, its
# language, a function in a namespace, and a patch in the C API that the program uses.
# usage: c_facts_check.sh DEVTRACE TARGET TARGET_CXX WORK_DIR
set -u
[ $# -eq 4 ] || { echo "usage: $0 DEVTRACE TARGET TARGET_CXX WORK_DIR" >&2; exit 2; }
dt=$1 target=$2 cxx=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 2
fail=0
DEVTRACE_SIM_CUDA=1 "$dt" run -o "$work/t.db" "$target" >"$work/run.out" 2>&1
db=t.db src=c_facts_target.c
fact() { # LINE KEY: the values, one a line, tabs shown as |
    sqlite3 "$work/$db" "SELECT replace(value, char(9), '|') FROM source_facts_v WHERE file LIKE '%/$src' AND line = $1 AND key = '$2' ORDER BY value"
}
expect() { # LINE KEY WANT
    got=$(fact "$1" "$2")
    if [ "$got" != "$3" ]; then
        echo "$src line $1 $2: got '$got', want '$3'" >&2
        fail=1
    fi
}
expect 0 lang "c"
expect 14 device_var "dev"
expect 15 binds "a,b"
expect 16 stmt "16 17"
expect 17 stmt "16 17"
expect 17 binds "a"
expect 18 device_expr "dev"
expect 18 move_wrap "check"
expect 18 binds_kind "call"
expect 20 binds "c"
expect 20 block "19 23"
expect 20 loop "19 23         "
expect 20 indent "        "
expect 20 function "main"
expect 20 function_line "13"
expect 20 args "dt_add|a|b"
expect 19 opens "1"
expect 19 body_indent "        "
expect 28 returns "1"
expect 26 optimizer_var "sgd"
expect 36 binds_attr "h->t"
expect 25 module_var "lin,none"
expect 25 binds "lin,none"
n=$(sqlite3 "$work/t.db" "SELECT count(*) FROM source_facts_v WHERE file LIKE '/usr/%'")
[ "$n" = 0 ] || { echo "$n facts about system files" >&2; fail=1; }
(cd "$work" && "$dt" fix -o fix.patch t.db) >"$work/fix.out" 2>&1 || { echo "devtrace fix failed: $(cat "$work/fix.out")" >&2; fail=1; }
grep -qx '+    a = check(dt_to(a, dev));' "$work/fix.patch" && grep -q '^@@ -18,2 +18,3 @@' "$work/fix.patch" || {
    echo "the patch is not the move of 'a' after line 18:" >&2
    cat "$work/fix.patch" >&2
    fail=1
}
"$dt" fix --verify -o "$work/v.patch" "$work/t.db" >"$work/verify.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "cannot verify a compiled program" "$work/verify.out" || {
    echo "fix --verify on a C program: exit $rc, $(cat "$work/verify.out")" >&2
    fail=1
}
DEVTRACE_C_FACTS=0 DEVTRACE_SIM_CUDA=1 "$dt" run -o "$work/off.db" "$target" >/dev/null 2>&1
n=$(sqlite3 "$work/off.db" "SELECT count(*) FROM source_facts_v")
[ "$n" = 0 ] || { echo "DEVTRACE_C_FACTS=0 still wrote $n facts" >&2; fail=1; }
# C++
DEVTRACE_SIM_CUDA=1 "$dt" run -o "$work/cxx.db" "$cxx" >"$work/cxx.out" 2>&1
db=cxx.db src=c_facts_target.cc
expect 0 lang "c++"
expect 11 function "make"
expect 11 function_line "8"
expect 11 binds "t"
expect 12 returns "1"
expect 19 move_wrap "-"
expect 20 args "dt_add|b|a"
# C++'s binary operators as calls with their operands, where the operator binds both as plain names
expect 28 args "operator-|p|q"
expect 29 args "operator*|q|r"
expect 30 args "operator*|p|q"
expect 31 args "operator-|s|u"
(cd "$work" && "$dt" fix -o cxx.patch cxx.db) >"$work/cxxfix.out" 2>&1
grep -qx '+    a = dt_to(a, dev);' "$work/cxx.patch" && grep -q '^@@ -19,2 +19,3 @@' "$work/cxx.patch" || {
    echo "the C++ patch is not the move of 'a' after line 19: $(cat "$work/cxx.patch" "$work/cxxfix.out")" >&2
    fail=1
}
[ $fail = 0 ] && echo "c_facts_check: all facts and the patch as expected"
exit $fail
