"""The diagnosis engine's rules on C programs on libdtrt: one fixture per mechanism (tests/rules/c/<rule-id>.<case>.c),
each a short program with a device-placement bug that fails only on simulated GPUs. Its header says what the report
must propose, as the PyTorch fixtures' does (tests/viewer/rule_fixtures.py):
    // rule: <id>
    // code: <the suggested code, exactly; one `// code:` line per line of code>
    // says: <a phrase the advice's text must hold; any number of these>
and the line where the fix goes carries the comment "devtrace: fix" (and, optionally, the line where the odd operand got
its device, the JSON's reached_device_at, "devtrace: origin"). For every fixture: untraced on the CPU it exits
0; traced on two simulated GPUs it fails, `devtrace report --json` names that rule, that line and that code, and its
one patch, written by `devtrace fix` from the source tree and applied with patch -p0 to a copy, compiled against
libdtrt with the flags of tests/viewer/c_fix_examples.sh, runs on the same simulated GPUs and on the CPU (exit 0).

usage: c_rule_fixtures.py DEVTRACE BUILD_DIR SOURCE_DIR WORK_DIR [NAME...]
  BUILD_DIR holds the fixtures built by CMake (tests/rules-c/<file name less .c>) and runtime/libdtrt.so
  NAME      only those fixtures (file names less .c)
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys

if len(sys.argv) < 5:
    sys.exit(__doc__.strip().splitlines()[-4])
DEVTRACE, BUILD, SRC, WORK = (os.path.abspath(a) for a in sys.argv[1:5])
ONLY = set(sys.argv[5:])
REL = os.path.join("tests", "rules", "c")
FIXTURES = os.path.join(SRC, REL)
CC = os.environ.get("CC", "cc")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)
    return ok


def run(cmd, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("DEVTRACE_SIM_CUDA", None)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd or WORK, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def expected(path):
    rule, code, fix, says = None, [], [], []
    ORIGIN.pop(path, None)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"// (rule|code|says): ?(.*)$", line.rstrip("\n"))
            if m and m.group(1) == "rule":
                rule = m.group(2).strip()
            elif m and m.group(1) == "says":
                says.append(m.group(2))
            elif m:
                code.append(m.group(2))
            if "devtrace: fix" in line:
                fix.append(n)
            if "devtrace: origin" in line:  # optional: where the odd operand got its device (reached_device_at)
                ORIGIN[path] = n
    return rule, "\n".join(code), fix, says


ORIGIN = {}  # fixture path -> the line of its "devtrace: origin" marker, where it has one


def fixture(file):
    name = file[:-2]
    rule, code, fix, says = expected(os.path.join(FIXTURES, file))
    if not check("%s: header names its rule and one line has the fix marker" % name,
                 rule == name.split(".")[0] and len(fix) == 1, "rule %r, fix markers on lines %r" % (rule, fix)):
        return
    fix = fix[0]
    exe = os.path.join(BUILD, "tests", "rules-c", name)
    w = os.path.join(WORK, name)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    rc, _, err = run([exe], {"CUDA_VISIBLE_DEVICES": ""})
    check("%s: runs on the CPU untraced (exit 0)" % name, rc == 0, err[-2000:])
    db = os.path.join(w, "trace.db")
    rc, _, err = run([DEVTRACE, "run", "-o", db, "--overwrite", exe], {"DEVTRACE_SIM_CUDA": "2", "DEVTRACE_QUIET": "1"})
    if not check("%s: fails on two simulated GPUs (exit 1)" % name, rc == 1, err[-2000:]):
        return
    rc, out, err = run([DEVTRACE, "report", "--json", db])
    try:
        mm = json.loads(out)["traces"][0]["mismatches"][0]
        got = mm["fix"] or {}
    except Exception as e:  # no JSON, no mismatch, no fix: say what came instead
        check("%s: report --json has a mismatch with a fix" % name, False,
              "%s: %s\n%s%s" % (type(e).__name__, e, out[:3000], err[-1000:]))
        return
    site = got.get("site") or {}
    show = json.dumps(got, indent=1)[:3000]
    check("%s: rule %s" % (name, rule), got.get("rule") == rule, show)
    check("%s: fix at line %d" % (name, fix), site.get("line") == fix and os.path.basename(site.get("file", "")) == file,
          show)
    check("%s: code %r" % (name, code), (got.get("code") or "") == code, show)
    for phrase in says:
        check("%s: the advice says %r" % (name, phrase), phrase in (got.get("text") or ""), show)
    origin = ORIGIN.get(os.path.join(FIXTURES, file))
    if origin:
        odd = [o for o in mm.get("operands", []) if o.get("odd")]
        at = (odd[0].get("reached_device_at") or {}) if odd else {}
        check("%s: the odd operand got its device at line %d" % (name, origin), at.get("line") == origin,
              json.dumps(at))
    # the patch, as c_fix_examples.sh makes and applies it: from the source tree, onto a copy of the fixtures
    patch = os.path.join(w, "fix.patch")
    rc, out, err = run([DEVTRACE, "fix", "-o", patch, db], cwd=SRC)
    if not check("%s: devtrace fix writes a patch" % name, rc == 0, out[-1000:] + err[-1000:]):
        return
    shutil.copytree(FIXTURES, os.path.join(w, REL))
    with open(patch) as f:
        p = subprocess.run(["patch", "-p0", "--batch", "--quiet"], stdin=f, cwd=w, capture_output=True, text=True)
    if not check("%s: the patch applies" % name, p.returncode == 0, p.stdout + p.stderr):
        return
    fixed = os.path.join(w, name)
    rc, out, err = run([CC, "-D_GNU_SOURCE", "-I" + os.path.join(SRC, "include"), "-I" + os.path.join(SRC, "examples"),
                        "-O2", "-g", "-DNDEBUG", "-Wall", "-Wextra", "-std=c11", os.path.join(w, REL, file), "-o",
                        fixed, "-Wl,-rpath," + os.path.join(BUILD, "runtime"),
                        os.path.join(BUILD, "runtime", "libdtrt.so")])
    if not check("%s: the patched program builds" % name, rc == 0, err[-2000:]):
        return
    rc, out, err = run([fixed], {"DEVTRACE_SIM_CUDA": "2"})
    check("%s: the patched program runs on two simulated GPUs" % name, rc == 0, (out + err)[-2000:])
    rc, out, err = run([fixed], {"CUDA_VISIBLE_DEVICES": ""})
    check("%s: the patched program runs on the CPU" % name, rc == 0, (out + err)[-2000:])


os.makedirs(WORK, exist_ok=True)
files = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".c") and (not ONLY or f[:-2] in ONLY))
check("fixtures found in %s" % FIXTURES, files)
for f in files:
    fixture(f)
failed = results.count(False)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
