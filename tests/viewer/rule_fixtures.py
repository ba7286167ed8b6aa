"""Tests of the diagnosis engine's rules, one fixture per rule id (tests/rules/<rule-id>.py; run by ctest), and
more for the placements a rule chooses between (tests/rules/<rule-id>.<case>.py).

Each fixture is a short PyTorch program with a device-placement bug that fails only on simulated GPUs. Its
header says what the report must propose:
    # rule: <id>
    # code: <the suggested code, exactly; one `# code:` line per line of code; none when the rule gives none>
    # absent: <a text the advice must not contain> (optional, one per line: a fix the rule must not offer)
and the line where the fix goes carries "# devtrace: fix". For every fixture: untraced on the CPU it exits
0; traced with DEVTRACE_SIM_CUDA=1 it fails, `devtrace report --json` names that rule, that line and that
code, and `devtrace fix --verify` says that the patched program ran. The rules are the registry's, as
`devtrace rules --json` prints it (viewer/rules/registry.c): every rule of the registry must have a fixture
and every fixture must name a rule of the registry, so a new rule without a test fails the suite.

usage: rule_fixtures.py DEVTRACE PYTHON FIXTURES_DIR WORK_DIR [--rule ID [--verified-on-torch2] | --coverage]
  --rule ID   only rule ID's fixtures (ID.py, ID.*.py), after checking that ID is in the registry (ctest rule-ID)
  --verified-on-torch2
              PYTHON is a torch 1.x and the same fixtures' patches are run by the torch 2 twin (ctest
              rule-ID-torch2): rule, fix line and code are checked here, `fix --verify` is not run again
  --cpu-checked-on-torch1
              PYTHON is a torch 2 and the torch 1.x twin (ctest rule-ID) runs each fixture untraced on the CPU:
              not run again here (`fix --verify` here runs the patched program on the CPU)
  --coverage  only the registry against the fixtures (ctest rules-registry)
  neither     both, every fixture
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from rule_programs import native_programs  # noqa: E402  (the one reader of the programs' headers)

USAGE = ("usage: rule_fixtures.py DEVTRACE PYTHON FIXTURES_DIR WORK_DIR "
         "[--rule ID [--verified-on-torch2 | --cpu-checked-on-torch1] | --coverage]")
VERIFY = sys.argv[-1] != "--verified-on-torch2"
CPU_CHECK = sys.argv[-1] != "--cpu-checked-on-torch1"
if not VERIFY or not CPU_CHECK:
    del sys.argv[-1]
if len(sys.argv) not in (5, 6, 7) or ((not VERIFY or not CPU_CHECK) and sys.argv[5:6] != ["--rule"]):
    sys.exit(USAGE)
DEVTRACE, PYTHON, FIXTURES, WORK = sys.argv[1:5]
ONLY, COVERAGE = None, True
if sys.argv[5:6] == ["--rule"] and len(sys.argv) == 7:
    ONLY, COVERAGE = sys.argv[6], False
elif sys.argv[5:] == ["--coverage"]:
    ONLY = ""
elif len(sys.argv) != 5:
    sys.exit(USAGE)
if ONLY:
    WORK = os.path.join(WORK, ONLY)  # one directory per rule: the rules' tests run in parallel
os.makedirs(WORK, exist_ok=True)
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)


def run(cmd, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("DEVTRACE_SIM_CUDA", None)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd or WORK, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def expected(path):
    """The fixture's header: its rule id, its code lines, the texts its advice must not hold, and the line of its
    fix marker."""
    rule, code, absent, fix = None, [], [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"# (rule|code|absent): ?(.*)$", line.rstrip("\n"))
            if m and m.group(1) == "rule":
                rule = m.group(2).strip()
            elif m and m.group(1) == "absent":
                absent.append(m.group(2))
            elif m:
                code.append(m.group(2))
            if "# devtrace: fix" in line:
                fix.append(n)
    return rule, "\n".join(code), absent, fix


def fixture(name):
    """All checks of one fixture; returns [(check, ok, detail)]."""
    path = os.path.join(FIXTURES, name)
    rule, code, absent, fix = expected(path)
    if rule != name[:-3].split(".")[0] or len(fix) != 1:
        return [("%s: header names its own rule and one line has the fix marker" % name, False,
                 "rule %r, fix markers on lines %r" % (rule, fix))]
    fix = fix[0]
    out = []
    if CPU_CHECK:  # else the torch 1.x twin's check
        prc, _, perr = run([PYTHON, path])
        out.append(("%s: runs on the CPU untraced (exit 0)" % name, prc == 0, perr[-2000:]))
    db = os.path.join(WORK, name[:-3] + ".db")
    rc, _, se = run([DEVTRACE, "run", "-o", db, "--overwrite", "--", PYTHON, path],
                    {"DEVTRACE_SIM_CUDA": "1", "DEVTRACE_QUIET": "1"})
    out.append(("%s: fails on a simulated GPU (exit 1)" % name, rc == 1, se[-2000:]))
    jrc, jout, jerr = run([DEVTRACE, "report", "--json", db])
    try:
        mm = json.loads(jout)["traces"][0]["mismatches"]
        got = mm[0]["fix"] or {}
    except Exception as e:  # no JSON, no mismatch, no fix: say what came instead
        out.append(("%s: report --json has a mismatch with a fix" % name, False,
                    "%s: %s\n%s%s" % (type(e).__name__, e, jout[:3000], jerr[-1000:])))
        return out
    site = got.get("site") or {}
    show = json.dumps(got, indent=1)[:3000]
    out.append(("%s: rule %s" % (name, rule), got.get("rule") == rule, show))
    out.append(("%s: fix at line %d" % (name, fix),
                site.get("line") == fix and os.path.basename(site.get("file", "")) == name, show))
    out.append(("%s: code %r" % (name, code), (got.get("code") or "") == code, show))
    for text in absent:
        out.append(("%s: the advice does not say %r" % (name, text), text not in (got.get("text") or ""), show))
    if not VERIFY:  # the same rule, line and code as checked above: the torch 2 twin runs the patch
        return out
    # the command is the test's own (after --), run in a copy of the fixtures' directory
    vrc, vout, verr = run([DEVTRACE, "fix", "--verify", db, "--", PYTHON, path], cwd=FIXTURES)
    out.append(("%s: its patch makes it run (devtrace fix --verify)" % name, vrc == 0 and "verified" in vout,
                "exit %d\n%s%s" % (vrc, vout[-3000:], verr[-1000:])))
    return out


LANGS = {}  # rule id -> the languages `devtrace rules --json` says it explains programs of


def native_fixtures():
    """The native programs that name their rule (scripts/rule_programs.py): {language: {rule id: [file names]}}."""
    progs = native_programs(os.path.join(FIXTURES, "..", ".."))
    return {lang: {rid: [os.path.basename(p) for p in ps] for rid, ps in by.items()} for lang, by in progs.items()}


def registry():
    """The ids of the rule registry, as `devtrace rules --json` prints it; None (and the reason) on a failure."""
    rc, out, err = run([DEVTRACE, "rules", "--json"])
    try:
        rules = json.loads(out)["rules"]
        LANGS.update((r["id"], set(r["languages"])) for r in rules)
        return [r["id"] for r in rules], ""
    except Exception as e:  # no JSON: say what came instead
        return None, "exit %d, %s: %s\n%s%s" % (rc, type(e).__name__, e, out[:2000], err[-1000:])


def fixture_rule(name):
    return name[:-3].split(".")[0]


def coverage(ids, why):
    have = {fixture_rule(n) for n in os.listdir(FIXTURES) if n.endswith(".py")}
    out = [("devtrace rules --json: the registry read (%d rules)" % len(ids or []), bool(ids), why)]
    for rid in ids or []:
        out.append(("rule %s has a fixture (%s.py)" % (rid, rid), rid in have, "add %s/%s.py" % (FIXTURES, rid)))
    # the languages each rule says it explains: a fixture in each, and none in another (a rule that explains C
    # programs is tried on one)
    native = native_fixtures()
    for lang, files in sorted(native.items()):
        for rid in ids or []:
            declared, got = lang in LANGS.get(rid, ()), files.get(rid, [])
            if declared or got:
                out.append(("rule %s: %s program%s of %s (%s)" % (rid, "a" if declared else "no", "" if declared else "s",
                                                                  lang, ", ".join(got) or "none"),
                            bool(got) == declared,
                            "`devtrace rules` says %s; fixtures: %r" % (sorted(LANGS.get(rid, ())), got)))
        for n in files.get("", []):
            out.append(("%s program %s names its rule (// rule: <id>)" % (lang, n), False, "no // rule: line"))
        for rid in sorted(set(files) - set(ids or []) - {""}):
            out.append(("%s programs %s name a rule of the registry" % (lang, files[rid]), False,
                        "no rule %s in `devtrace rules`" % rid))
    for rid in ids or []:
        out.append(("rule %s explains python programs" % rid, "python" in LANGS.get(rid, ()),
                    "languages: %r" % sorted(LANGS.get(rid, ()))))
    for n in sorted(have - set(ids or [])):
        out.append(("fixture %s.py names a rule of the registry" % n, False,
                    "no rule %s in `devtrace rules` (viewer/rules/registry.c)" % n))
    return out


ids, why = registry()
if COVERAGE:
    for name, ok, detail in coverage(ids, why):
        check(name, ok, detail)
names = sorted(n for n in os.listdir(FIXTURES) if n.endswith(".py") and ONLY in (None, fixture_rule(n)))
if not VERIFY:
    print("note: the patches are run by the torch 2 twin of this test (--verified-on-torch2)", flush=True)
if not CPU_CHECK:
    print("note: the untraced CPU runs are the torch 1.x twin's (--cpu-checked-on-torch1)", flush=True)
if ONLY:
    check("rule %s is in the registry (devtrace rules)" % ONLY, ONLY in (ids or []), why or "ids: %r" % ids)
    check("rule %s has a fixture" % ONLY, bool(names), "add %s/%s.py" % (FIXTURES, ONLY))
elif ONLY == "":
    names = []
with concurrent.futures.ThreadPoolExecutor(max_workers=1 if ONLY else 2) as pool:
    for checks in pool.map(fixture, names):
        for name, ok, detail in checks:
            check(name, ok, detail)
failed = sum(1 for _, ok in results if not ok)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed or not results else 0)
