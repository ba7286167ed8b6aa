"""The Chrome/Perfetto export checked on real traces: examples/mlp_train on
a simulated GPU, two copies of its trace told apart only by their host, and
(where /usr/bin/python3 imports torch) a PyTorch example. Rules: on each
(pid, tid) track the slices ("X") nest or are disjoint; ops and transfers
carry their call site and tensor ids; each trace is its own process, named
"host pid N (program)"; a C++ exception is shown once.

usage: chrome_export.py DEVTRACE MLP_TRAIN PYTORCH_EXAMPLES_DIR WORKDIR"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

DEVTRACE, MLP, PYEX, WORK = map(os.path.abspath, sys.argv[1:5])
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
failed = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n  " + str(detail)[:3000]), flush=True)
    if not ok:
        failed.append(name)


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, env=e, cwd=WORK, capture_output=True, text=True, timeout=600)


def rules(tag, doc, ntraces):
    """Checks one export; returns its events."""
    ev = doc["traceEvents"]
    tracks = {}
    for e in ev:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append((round(e["ts"] * 1000), round(e["dur"] * 1000), e))
    bad = []
    for key, xs in tracks.items():
        xs.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, dur, e in xs:
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and ts + dur > stack[-1]:
                bad.append((key, e["name"], ts, dur, stack[-1]))
            stack.append(ts + dur)
    check("%s: %d slices on %d tracks nest or are disjoint" % (tag, sum(map(len, tracks.values())), len(tracks)),
          not bad, bad[:5])
    fake = [e for e in ev if e.get("cat") == "transfer" and e["ph"] != "i"]
    check("%s: transfers are instants" % tag, not fake, fake[:3])
    ops = [e for e in ev if e.get("cat") == "op"]
    xfers = [e for e in ev if e.get("cat") == "transfer"]
    nosite = [e for e in ops + xfers if not e["args"].get("site")]
    check("%s: %d ops and %d transfers, each with a call site" % (tag, len(ops), len(xfers)), not nosite, nosite[:3])
    noids = [e for e in ops if "inputs" not in e["args"] or "outputs" not in e["args"]] + \
        [e for e in xfers if not isinstance(e["args"].get("src"), int)]
    check("%s: tensor ids in ops and transfers" % tag, not noids, noids[:3])
    names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    check("%s: %d traces, %d processes" % (tag, ntraces, len(names)), len(names) == ntraces, names)
    orphans = {e["pid"] for e in ev} - set(names)
    check("%s: every event in a named process" % tag, not orphans, orphans)
    return ev


# ---- mlp_train on a simulated GPU
db = os.path.join(WORK, "mlp.db")
p = run([DEVTRACE, "run", "-o", db, "--", MLP], {"DEVTRACE_SIM_CUDA": "1", "DEVTRACE_QUIET": "1"})
check("mlp_train traced", p.returncode == 0 and os.path.exists(db), p.stderr)
db2 = os.path.join(WORK, "mlp-other-host.db")
shutil.copy(db, db2)
with sqlite3.connect(db2) as c:
    c.execute("UPDATE meta SET value = 'otherhost' WHERE key = 'host'")
out = os.path.join(WORK, "mlp.json")
p = run([DEVTRACE, "export", "--format", "chrome", "-o", out, db, db2])
check("export of two traces", p.returncode == 0, p.stderr)
with open(out, "rb") as f:
    doc = json.loads(f.read().decode("utf-8"))
ev = rules("mlp_train x2", doc, 2)
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
pid = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key = 'pid'").fetchone()[0]
check("processes named host pid N (program)",
      any(n == "otherhost pid %s (mlp_train)" % pid for n in names) and all("pid %s (mlp_train)" % pid in n
                                                                           for n in names), names)
ops = [e for e in ev if e.get("cat") == "op"]
check("op sites are the program's lines", all("mlp_train.c:" in e["args"]["site"] or ".c:" in e["args"]["site"]
                                              for e in ops), [e["args"]["site"] for e in ops[:5]])
check("ops have real durations", any(e["ph"] == "X" and e["dur"] > 0 for e in ops))

# ---- a C++ exception thrown, caught and rethrown (`throw;`): rows as the
# interposer writes them (misc_events value 1 on the rethrow, same object)
db3 = os.path.join(WORK, "rethrow.db")
shutil.copy(db, db3)
with sqlite3.connect(db3) as c:
    seq, t, th = c.execute("SELECT max(seq) + 1, max(t) + 1000, min(thread) FROM misc_events").fetchone()
    for k, (re, obj) in enumerate([(0, 4096), (1, 4096), (0, 8192)]):
        c.execute("INSERT INTO misc_events VALUES (?, ?, ?, 14, NULL, NULL, NULL, NULL, ?)", (seq + k, t + k, th, re))
        c.execute("INSERT INTO errors (seq, kind, message, exception, object) VALUES (?, 14, 'boom', "
                  "'std::runtime_error', ?)", (seq + k, obj))
out = os.path.join(WORK, "rethrow.json")
p = run([DEVTRACE, "export", "--format", "chrome", "-o", out, db3])
with open(out, "rb") as f:
    exc = [e for e in json.loads(f.read().decode("utf-8"))["traceEvents"] if e.get("cat") == "error"
           and e["args"].get("exception") == "std::runtime_error"]
check("a throw and its rethrow shown once (two exceptions: %d events)" % len(exc), len(exc) == 2, exc)

# ---- a PyTorch example, where Debian's python3-torch is there
py = "/usr/bin/python3"
if sys.argv[3] == "none":
    print("skip the PyTorch trace: the PyTorch adapter is not built here (a sanitizer build leaves it out)")
elif subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
    script = os.path.join(PYEX, "ok_labels_not_moved.py")
    pdb = os.path.join(WORK, "torch.db")
    p = run([DEVTRACE, "run", "-o", pdb, "--", py, script], {"DEVTRACE_SIM_CUDA": "1", "DEVTRACE_QUIET": "1"})
    check("%s traced" % os.path.basename(script), os.path.exists(pdb), p.stderr)
    out = os.path.join(WORK, "torch.json")
    p = run([DEVTRACE, "export", "--format", "chrome", "-o", out, pdb])
    check("export of the PyTorch trace", p.returncode == 0, p.stderr)
    with open(out, "rb") as f:
        ev = rules("pytorch", json.loads(f.read().decode("utf-8")), 1)
    sites = [e["args"]["site"] for e in ev if e.get("cat") in ("op", "transfer")]
    check("PyTorch sites are Python lines", sites and all(".py:" in s for s in sites), sites[:5])
    exc = [e for e in ev if e.get("cat") == "error" and "exception" in e["args"]]
    with sqlite3.connect(pdb) as c:
        objs = c.execute("SELECT count(DISTINCT object) FROM errors WHERE exception IS NOT NULL").fetchone()[0]
    check("each C++ exception once (%d shown, %d thrown objects)" % (len(exc), objs), len(exc) <= max(objs, 0) or
          objs == 0, exc[:3])
else:
    print("skip the PyTorch trace: /usr/bin/python3 does not import torch")

print("%d failed" % len(failed))
sys.exit(1 if failed else 0)
