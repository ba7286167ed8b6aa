"""The trainer examples (examples/pytorch/trainers) end to end on simulated GPUs, with torch 2.x (run by
ctest as pytorch-trainers; the interpreter is DEVTRACE_TORCH2_PYTHON's, with lightning, transformers and
accelerate installed).

For every bug_*.py, traced under `devtrace run` with DEVTRACE_SIM_CUDA=1 (2 for the DDP ones; the
torchrun ones started as `python -m torch.distributed.run --standalone --nproc_per_node 2`):
  - it exits 1 with PyTorch's device-mismatch RuntimeError, as it would untraced on GPUs;
  - `devtrace report --json` over the run's traces (one per process) finds a mismatch whose odd operand was
    made on the source's "devtrace: origin" line, and whose fix is in the example's own file, on its
    "devtrace: fix" line (never in the trainer's code); the failing op's site is the example's too;
  - the text report hides the trainer's frames ("frames of torch, other packages ... hidden") and names
    the rank for the multi-process ones.
Its twin ok_*.py exits 0 and its report says "no device mismatch".

usage: trainer_examples.py DEVTRACE PYTHON EXAMPLES_DIR WORK_DIR [NAME_PART]
Exits 77 (ctest: skipped) with the reason when PYTHON is empty; prints one line per check and
"N passed, N failed"; exits 1 on a failure.
"""

import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys

if len(sys.argv) < 5 or not sys.argv[2]:
    print("SKIP: no torch 2.x interpreter (configure with -DDEVTRACE_TORCH2_PYTHON=/path/to/python, a Python "
          "with torch 2.13, lightning, transformers and accelerate; scripts/test.sh makes one)")
    sys.exit(77)
DEVTRACE, PYTHON, EXAMPLES, WORK = (os.path.abspath(a) if i != 1 else a for i, a in enumerate(sys.argv[1:5]))
PART = sys.argv[5] if len(sys.argv) > 5 else ""
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + detail), flush=True)


def marker(path, word):
    """The line of the source that carries "devtrace: WORD"."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if "devtrace: " + word in line:
                return i
    return None


def multi(name):
    return "ddp" in name or "torchrun" in name


def traced(script):
    """Runs script under devtrace run in a directory of its own; (exit status, output, run dir)."""
    name = os.path.basename(script)[:-3]
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(os.environ, DEVTRACE_SIM_CUDA="2" if multi(name) else "1", DEVTRACE_QUIET="1",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    prog = [PYTHON, script]
    if "torchrun" in name:
        prog = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", script]
    p = subprocess.run([DEVTRACE, "run", "-o", os.path.join(d, "job.db"), "--"] + prog, cwd=d, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    return p.returncode, p.stdout, d


def report(d, *args):
    p = subprocess.run([DEVTRACE, "report", *args, d], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    return p.returncode, p.stdout


def same_file(site_file, d, script):
    f = site_file if os.path.isabs(site_file) else os.path.join(d, site_file)
    return os.path.realpath(f) == os.path.realpath(script)


def check_bug(script):
    name = os.path.basename(script)
    rc, out, d = traced(script)
    check("%s: exits 1 on the device mismatch, as untraced on GPUs" % name,
          rc == 1 and "Expected all tensors to be on the same device" in out, "exit %d\n%s" % (rc, out[-3000:]))
    rrc, js = report(d, "--json")
    try:
        traces = json.loads(js)["traces"]
    except (ValueError, KeyError):
        check("%s: report --json reads the run's traces" % name, False, js[-3000:])
        return
    found = [(t, m) for t in traces for m in t.get("mismatches", [])]
    check("%s: report finds the mismatch (exit 1)" % name, rrc == 1 and found, js[-2000:])
    if not found:
        return
    origin, fix = marker(script, "origin"), marker(script, "fix")
    t, m = found[0]
    odd = [o for o in m["operands"] if o.get("odd")]
    made = odd[0]["chain"][0]["site"] if odd and odd[0].get("chain") else {}
    check("%s: the odd operand was made at the user's line %s" % (name, origin),
          same_file(made.get("file", ""), d, script) and made.get("line") == origin, json.dumps(m)[:3000])
    check("%s: the failing op's site is in the user's file" % name, same_file(m["site"]["file"], d, script),
          json.dumps(m["site"]))
    fsite = (m.get("fix") or {}).get("site") or {}
    check("%s: the fix is in the user's file, at line %s" % (name, fix),
          same_file(fsite.get("file", ""), d, script) and fsite.get("line") == fix, json.dumps(m.get("fix")))
    _, text = report(d)
    # the Python stack shows no frame of an installed package; where the trainer calls the user's code
    # (Lightning's training_step, HF's compute_loss) its frames are there, hidden
    calls_back = "lightning" in name or "hf_" in name
    check("%s: the text report hides the trainer's and torch's frames" % name,
          not re.search(r"#\d+ .*/(site|dist)-packages/", text) and
          (not calls_back or re.search(r"frames? of torch, other packages and Python's library hidden", text)),
          text[:3000])
    if multi(name):
        ranks = sorted({t.get("rank") for t, _ in found if t.get("rank") is not None})
        check("%s: a rank's trace holds the mismatch and the report names the rank" % name,
              ranks and re.search(r"\(rank \d", text), "ranks %s\n%s" % (ranks, text[:2000]))


def check_ok(script):
    name = os.path.basename(script)
    rc, out, d = traced(script)
    check("%s: exits 0" % name, rc == 0, "exit %d\n%s" % (rc, out[-3000:]))
    rrc, text = report(d)
    check("%s: report says no device mismatch (exit 0)" % name, rrc == 0 and "no device mismatch" in text,
          text[-2000:])


def main():
    os.makedirs(WORK, exist_ok=True)
    probe = subprocess.run([PYTHON, "-c", "import torch, lightning, transformers, accelerate; print(torch.__version__)"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        print("FAIL %s cannot import torch, lightning, transformers and accelerate:\n%s" % (PYTHON, probe.stdout))
        print("0 passed, 1 failed")
        return 1
    print("torch", probe.stdout.strip(), "at", PYTHON, flush=True)
    bugs = sorted(p for p in glob.glob(os.path.join(EXAMPLES, "bug_*.py")) if PART in os.path.basename(p))
    jobs = [(check_bug, b) for b in bugs]
    jobs += [(check_ok, os.path.join(EXAMPLES, "ok_" + os.path.basename(b)[4:])) for b in bugs]
    check("every bug example has its fixed twin", all(os.path.exists(s) for _, s in jobs))
    check("examples found", len(bugs) >= (1 if PART else 5), "%d bug examples in %s" % (len(bugs), EXAMPLES))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(fn, s) for fn, s in jobs if os.path.exists(s)]:
            f.result()
    failed = sum(1 for _, ok in results if not ok)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
