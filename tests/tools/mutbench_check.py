#!/usr/bin/env python3
"""Test of the mutation benchmark's tool itself (scripts/mutbench.py), on our own tests/tools/mutbench/tiny_train.py:
mutants of every kind are generated and each applies and parses; the scorer (judge) classifies known reports
right, both ways; and, where a devtrace and a torch are given, one mutant run end to end is kept and scored.

usage: mutbench_check.py [DEVTRACE PYTHON WORKDIR]   (without them: generation and scoring only)
"""

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import mutbench  # noqa: E402

PROG = os.path.join(HERE, "mutbench")
fails = []


def check(what, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else ": " + str(detail)[:600]))
    if not ok:
        fails.append(what)


def find(muts, kind, new_has):
    hits = [m for m in muts if m["kind"] == kind and new_has in m["new"]]
    return hits[0] if hits else None


muts = mutbench.generate(PROG, ["tiny_train.py"])
kinds = {m["kind"] for m in muts}
check("every kind has a mutant", kinds == set(mutbench.KINDS), sorted(set(mutbench.KINDS) - kinds))
with open(os.path.join(PROG, "tiny_train.py")) as f:
    original = f.read()
for m in muts:
    text = original[:m["start"]] + m["new"] + original[m["end"]:]
    try:
        ast.parse(text)
        parsed = True
    except SyntaxError as e:
        parsed = e
    check("mutant %s parses and changes one statement" % m["id"],
          parsed is True and text != original and original[m["start"]:m["end"]] == m["old"], parsed)
expect = [("buffer-to-attr", "self.pe = pe"), ("factory-device", "torch.zeros(1)"), ("move-dropped", "x"),
          ("model-move-removed", "pass"), ("move-removed", "pass"), ("cpu-added", "self.fc(h).cpu()"),
          ("map-location-cpu", "map_location='cpu'"), ("weight-no-device", "torch.tensor([1.0, 2.0, 1.0])")]
for kind, new in expect:
    check("a %s mutant writes %r" % (kind, new), find(muts, kind, new) is not None, [m["new"] for m in muts if m["kind"] == kind])
# device= is dropped from inside the call, the rest kept (a keyword between others, and its comma)
m = find(muts, "factory-device", "torch.ones(h.size(1))")
check("device= dropped with its comma", m is not None and m["new"] == "torch.ones(h.size(1))", m and m["new"])
# a weight made without a device is one mutant of the weight kind, not also a factory one
check("the loss weight is not also a factory mutant",
      find(muts, "factory-device", "torch.tensor([1.0, 2.0, 1.0])") is None)

# torch's own capitalized tensor constructors are no module: `torch.Tensor(x).to(d)` loses a tensor's move
d = tempfile.mkdtemp(prefix="mutbench-check.")
with open(os.path.join(d, "t.py"), "w") as f:
    f.write("import torch\nd = 'cuda'\na = torch.Tensor([1.0]).to(d)\nm = torch.nn.Linear(2, 2).to(d)\n")
got = {m["line"]: m["kind"] for m in mutbench.generate(d, ["t.py"])}
check("torch.Tensor(x).to(d) is a tensor's move, torch.nn.Linear(...).to(d) a module's",
      got.get(3) == "move-dropped" and got.get(4) == "model-move-removed", got)
shutil.rmtree(d)

# ---- the scorer on reports we write ourselves (no devtrace): known right and known wrong cases
def work_with(m):
    d = tempfile.mkdtemp(prefix="mutbench-check.")
    shutil.copyfile(os.path.join(PROG, "tiny_train.py"), os.path.join(d, "tiny_train.py"))
    first, last, delta = mutbench.apply(d, m)
    return d, first, last, delta


def line_of(d, text, after=0):
    with open(os.path.join(d, "tiny_train.py")) as f:
        for n, l in enumerate(f, 1):
            if n > after and l.strip().startswith(text):
                return n
    raise AssertionError(text)


def report(d, origin_line, diff_lines):
    """A first mismatch as `devtrace report --json` gives it: an odd operand reached its device at ORIGIN_LINE;
    the patch replaces or inserts DIFF_LINES: [(old_line, old_text or None, new_text)]."""
    path = os.path.join(d, "tiny_train.py")
    hunks = []
    for ln, old, new in diff_lines:
        if old is None:
            hunks.append("@@ -%d,0 +%d,1 @@\n+%s" % (ln, ln, new))
        else:
            hunks.append("@@ -%d,1 +%d,1 @@\n-%s\n+%s" % (ln, ln, old, new))
    diff = "--- %s\n+++ %s\n%s\n" % (path, path, "\n".join(hunks))
    return {"operands": [{"odd": True, "reached_device_at": {"file": path, "line": origin_line}}],
            "fix": {"rule": "test", "site": {"file": path, "line": diff_lines[0][0]}, "placement": "in"}, "diff": diff}


m = find(muts, "factory-device", "torch.zeros(1)")
d, first, last, delta = work_with(m)
n = line_of(d, "total = torch.zeros(1)")
with open(os.path.join(d, "tiny_train.py")) as f:
    old = f.read().split("\n")[n - 1]
r = mutbench.judge(d, m, first, last, delta, report(d, n, [(n, old, old.replace("(1)", "(1, device=device)"))]))
check("right origin and fix: both scored right, no literal", r["origin_ok"] and r["fix_ok"] and not r["literal"], r)
use = line_of(d, "total = total + model(x).sum()")
r = mutbench.judge(d, m, first, last, delta, report(d, use, [(use + 1, None, 'total = total.to("cuda:0")')]))
check("a move at the use: origin and fix scored wrong, the literal counted with a device in scope",
      not r["origin_ok"] and not r["fix_ok"] and r["literal"] and r["literal_in_scope"], r)
shutil.rmtree(d)
m = find(muts, "move-removed", "pass")
d, first, last, delta = work_with(m)
bind = line_of(d, "x, y = make_batch(8)")
r = mutbench.judge(d, m, first, last, delta, report(d, bind, [(bind + 1, None, "    x = x.to(device)")]))
check("a removed move: the statement that binds the same value counts for origin and fix", r["origin_ok"] and r["fix_ok"], r)
r = mutbench.judge(d, m, first, last, delta, report(d, bind, [(bind + 3, None, "    x = x.to(device)")]))
check("a removed move put back two statements later is no fix at the site", not r["fix_ok"], r)
shutil.rmtree(d)

# ---- end to end (a devtrace and a python that imports torch)
if len(sys.argv) == 4:
    devtrace, python, work = sys.argv[1:]
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    out = os.path.join(work, "rows.json")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "mutbench.py"), "--program", PROG,
                        "--run", "python tiny_train.py", "--devtrace", devtrace, "--python", python,
                        "--match", "torch.zeros(1)", "--json", out, "--work", os.path.join(work, "w"), "-j", "1"],
                       capture_output=True, text=True, timeout=900)
    check("mutbench.py ends well", p.returncode == 0, p.stdout[-800:] + p.stderr[-800:])
    rows = json.load(open(out))["rows"] if os.path.exists(out) else []
    check("the unmutated program runs on the simulated GPU and the cpu",
          os.path.exists(out) and json.load(open(out))["programs"].get("mutbench", {}).get("runs"), p.stdout[-600:])
    check("one mutant ran", len(rows) == 1, rows)
    if rows:
        r = rows[0]
        check("the zeros without device= fails with a device mismatch and is kept", r["kept"], r)
        check("its origin is the zeros statement", r["origin_ok"], r.get("origin_said"))
        check("the patch verdict is consistent (both = gpu and cpu)", r["both_ok"] == (r["gpu_ok"] and r["cpu_ok"]), r)
        print("   (devtrace said: origin %s, fix %s, patch runs on both: %s)" % (r["origin_said"], r["fix_said"], r["both_ok"]))
else:
    print("skip end to end: give DEVTRACE PYTHON WORKDIR to run one mutant under devtrace")

print("%d failed" % len(fails))
sys.exit(1 if fails else 0)
