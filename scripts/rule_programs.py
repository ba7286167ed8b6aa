"""The native programs that name the rule their report must give: C fixtures on libdtrt (tests/rules/c/*.c, ctest
c-rule-fixtures) and C++ programs on libtorch (tests/adapters/libtorch_bugs/*.cc, ctest libtorch-fix), each with
`// rule: <id>` for its first line. Read by the rule registry's coverage test (tests/viewer/rule_fixtures.py) and
by the rules' documentation (scripts/gen_rules_doc.py)."""

import os

DIRS = (("c", os.path.join("tests", "rules", "c"), ".c"),
        ("c++", os.path.join("tests", "adapters", "libtorch_bugs"), ".cc"))
HEADER = "// rule: "


def native_programs(src):
    """{language: {rule id ("" when the first line names none): [paths relative to src]}}."""
    out = {lang: {} for lang, _, _ in DIRS}
    for lang, d, ext in DIRS:
        full = os.path.join(src, d)
        for n in sorted(os.listdir(full)) if os.path.isdir(full) else ():
            if not n.endswith(ext):
                continue
            with open(os.path.join(full, n)) as f:
                head = f.readline().rstrip("\n")
            rid = head[len(HEADER):].strip() if head.startswith(HEADER) else ""
            out[lang].setdefault(rid, []).append(os.path.join(d, n))
    return out
