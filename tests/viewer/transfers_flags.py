"""`devtrace transfers` flags only what a user should change.

Correct training loops, traced on two simulated GPUs, must have no flagged
site: examples/mlp_train and cnn_train (libdtrt), and, when the PyTorch
adapter is built and torch imports, every examples/pytorch/ok_*.py. The
loops that copy too much (examples/slow_transfers.c and
examples/pytorch/slow_transfers.py) must be flagged exactly at the lines
their sources mark with `devtrace: transfers <reason>`, with that reason.

  transfers_flags.py DEVTRACE BUILD_EXAMPLES_DIR SOURCE_DIR WORK_DIR WITH_PYTORCH
"""
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys

cli, bin_dir, src, work, with_py = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, DEVTRACE_SIM_CUDA="2", DEVTRACE_QUIET="1")
env.pop("DEVTRACE_OUTPUT", None)


def marked(path):
    """{(basename, line): reason} from the source's markers."""
    want = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"devtrace: transfers (\w+)", text)
            if m:
                want[(os.path.basename(path), n)] = m.group(1)
    return want


def flagged(argv, name):
    """{(basename, line): reason} of the flagged sites of argv's trace."""
    db = os.path.join(work, name + ".db")
    run = subprocess.run([cli, "run", "-o", db, "--"] + argv, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300)
    if run.returncode != 0:
        return "devtrace run exited %d:\n%s" % (run.returncode, run.stdout)
    # a job that starts ranks (DDP's mp.spawn) leaves a trace per rank beside its own: all of them are read
    dbs = [p for p in [db] + sorted(glob.glob(db[:-3] + ".*.db")) if os.path.exists(p)]
    out = subprocess.run([cli, "transfers", "--json"] + dbs, stdout=subprocess.PIPE, text=True, timeout=120)
    if out.returncode != 0:
        return "devtrace transfers exited %d" % out.returncode
    got = {}
    sites = [s for t in json.loads(out.stdout)["traces"] for s in t["sites"]]
    if not sites:
        return "no transfers recorded"
    for s in sites:
        if (s["flag"] is None) != (s["reason"] is None) or s["per_step"] != (s["flag"] is not None):
            return "flag, reason and per_step disagree: %r" % s
        if s["reason"]:
            m = re.match(r"(.*):(\d+) \(", s["site"])
            got[(os.path.basename(m.group(1)) if m else s["site"], int(m.group(2)) if m else 0)] = s["reason"]
    return got


cases = [([os.path.join(bin_dir, ex)], ex, {}) for ex in ("mlp_train", "cnn_train")]
cases.append(([os.path.join(bin_dir, "slow_transfers")], "slow_transfers",
              marked(os.path.join(src, "examples", "slow_transfers.c"))))
if with_py == "1":
    pydir = os.path.join(src, "examples", "pytorch")
    for n in sorted(os.listdir(pydir)):
        if n.startswith("ok_") and n.endswith(".py"):
            cases.append((["/usr/bin/python3", os.path.join(pydir, n)], "py_" + n[:-3], {}))
    path = os.path.join(pydir, "slow_transfers.py")
    cases.append((["/usr/bin/python3", path], "py_slow_transfers", marked(path)))

failed = 0
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    results = list(pool.map(lambda c: flagged(c[0], c[1]), cases))
for (argv, name, want), got in zip(cases, results):
    if isinstance(got, str):
        print("FAIL %s: %s" % (name, got))
        failed += 1
    elif got != want:
        print("FAIL %s: flagged %s, expected %s" % (name, sorted(got.items()), sorted(want.items())))
        failed += 1
    else:
        print("ok   %s: %s" % (name, ", ".join("%s:%d %s" % (f, l, r) for (f, l), r in sorted(got.items()))
                                  or "nothing flagged"))
if any(c[2] == {} and c[1].startswith("slow") for c in cases):
    print("FAIL: a slow_transfers source lost its markers")
    failed += 1
sys.exit(1 if failed else 0)
