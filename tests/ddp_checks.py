"""Checks of DistributedDataParallel on simulated GPUs (run by ctest as pytorch-ddp): ranks started by
torch.multiprocessing.spawn each see the GPUs and their own, init_process_group("nccl") runs over gloo,
DDP all-reduces the gradients on the parameters' devices, each rank writes a trace named by its rank,
the ranks' traces of one job read as one merged report, `devtrace fix --verify` of a rank's trace runs
the job again (and says when a rank still fails), and the examples/pytorch/*_ddp_*.py examples pass
every check tests/pytorch_examples.py makes of an example.

usage: ddp_checks.py DEVTRACE PYTHON EXAMPLES_DIR WORK_DIR
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

DEVTRACE, PYTHON, EXAMPLES, WORK = sys.argv[1:5]
os.makedirs(WORK, exist_ok=True)
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)), flush=True)


def run(cmd, env=None, cwd=None):
    e = dict(os.environ)
    for k in ("DEVTRACE_SIM_CUDA", "DEVTRACE_SIM_TORCH_VERSION", "DEVTRACE_RANK", "RANK", "LOCAL_RANK"):
        e.pop(k, None)
    e["DEVTRACE_QUIET"] = "1"
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd or WORK, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def traced(name, code, env=None):
    """Writes NAME.py into its own directory WORK/NAME and runs it traced on 2 simulated GPUs there:
    (status, stdout, stderr, the directory)."""
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    script = os.path.join(d, name + ".py")
    with open(script, "w") as f:
        f.write(code)
    e = {"DEVTRACE_SIM_CUDA": "2"}
    e.update(env or {})
    rc, so, se = run([DEVTRACE, "run", "-o", os.path.join(d, "job.db"), "--", PYTHON, script], e, cwd=d)
    return rc, so, se, d


def rank_traces(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if ".rank" in f and f.endswith(".db"))


def meta(db, key):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
    finally:
        con.close()


SPAWN = '''import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    torch.manual_seed(rank)
    model = nn.Linear(4, 2).to(device)
    ddp = DDP(model, device_ids=[rank])
%s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    mp.spawn(train, args=(free_port(),), nprocs=2)
    print("parent DEVTRACE_RANK", os.environ.get("DEVTRACE_RANK"))
'''

# ---------------------------------------------------------------- what a rank sees

BODY = '''    out = ddp(torch.randn(8, 4))  # DDP moves the input to device_ids[0]
    out.sum().backward()
    g = model.weight.grad
    both = [torch.zeros_like(g) for _ in range(2)]
    dist.all_gather(both, g)
    words = ["rank", rank, "gpus", torch.cuda.device_count(), "current", torch.cuda.current_device(),
             "backend", dist.get_backend(), "nccl", dist.is_nccl_available(), "out", out.device,
             "output_device", ddp.output_device, "weight", model.weight.device, "grad", g.device,
             "grads equal", bool(torch.equal(both[0], both[1]))]
    os.write(1, (" ".join(str(w) for w in words) + "\\n").encode())  # one write a line: the ranks share the pipe
    dist.destroy_process_group()'''
rc, so, se, d = traced("ranks", SPAWN % BODY)
lines = sorted(l for l in so.splitlines() if l.startswith("rank "))
want = ["rank %d gpus 2 current %d backend nccl nccl True out cuda:%d output_device %d weight cuda:%d grad cuda:%d "
        "grads equal True" % (r, r, r, r, r, r) for r in range(2)]
check("each rank sees 2 GPUs and its own; nccl over gloo; DDP's output, parameters and all-reduced gradients on "
      "the rank's GPU", rc == 0 and lines == want, "%d\n%s\n%s" % (rc, so, se[-3000:]))
check("the parent's environment is left as it was (no DEVTRACE_RANK)", "parent DEVTRACE_RANK None" in so, so)
ranks = rank_traces(d)
check("a trace per rank, named and headed by its rank",
      len(ranks) == 2 and [meta(db, "rank") for db in ranks] == ["0", "1"]
      and all(".rank%d." % r in os.path.basename(db) for r, db in enumerate(ranks)), repr(ranks))
rrc, rep, rerr = run([DEVTRACE, "report"] + ranks)
check("a clean job's ranks: no device mismatch", rrc == 0 and rep.count("no device mismatch") == 2, rep + rerr)

# ---------------------------------------------------------------- one merged report

rc, so, se, d = traced("metric", SPAWN % '''    acc = torch.tensor([0.5])  # a metric made on the cpu
    dist.all_reduce(acc)
    dist.destroy_process_group()''')
check("a cpu tensor all_reduce'd over NCCL fails as NCCL does", rc == 1 and "RuntimeError: Tensors must be CUDA and "
      "dense" in se, se[-3000:])
rrc, rep, rerr = run([DEVTRACE, "report", d])
check("`devtrace report DIR`: the ranks' same mismatch reported once, as ranks 0, 1",
      rrc == 1 and "== ranks 0, 1: 2 traces with the same device mismatch" in rep
      and rep.count("error: device mismatch in all_reduce") == 1 and '"acc"' in rep
      and "metric.py:21 (train)" in rep, rep + rerr)
jrc, jout, _ = run([DEVTRACE, "report", "--json", d])
try:
    doc = json.loads(jout)
    groups = [g for g in doc["groups"] if g["mismatches"]]
    odd = [o for t in doc["traces"] for m in t["mismatches"] for o in m["operands"] if o["odd"]]
    peers = [o for t in doc["traces"] for m in t["mismatches"] for o in m["operands"] if not o["odd"]]
except Exception as e:
    groups, odd, peers = [], [], [repr(e)]
check("JSON: one group of ranks [0, 1]; the odd operand on cpu against the group's device (cuda:<rank>)",
      jrc == 1 and len(groups) == 1 and groups[0]["ranks"] == [0, 1]
      and [o["device"] for o in odd] == ["cpu", "cpu"]
      and sorted(o["device"] for o in peers) == ["cuda:0", "cuda:1"], jout[:3000])
rc2, so2, se2, d2 = traced("metric2x", SPAWN % '''    acc = torch.tensor([0.5])
    dist.all_reduce(acc)
    dist.destroy_process_group()''', {"DEVTRACE_SIM_TORCH_VERSION": "2.11"})
rrc2, rep2, _ = run([DEVTRACE, "report", d2])
check("faked 2.x: NCCL's check raises ValueError, and is recorded as a mismatch",
      rc2 == 1 and "ValueError: Tensors must be CUDA and dense" in se2 and "error: device mismatch in all_reduce" in rep2,
      se2[-2000:] + rep2)

# ---------------------------------------------------------------- fix --verify runs the job

rc, so, se, d = traced("two_bugs", SPAWN % '''    x = torch.randn(8, 4)
    y = torch.randn(8, 2)  # the labels left on the cpu
    loss = ((ddp(x) - y) ** 2).mean()
    loss.backward()
    acc = torch.tensor([loss.item()])  # and a metric made on the cpu
    dist.all_reduce(acc)
    dist.destroy_process_group()''')
ranks = rank_traces(d)
# a rank's own command is multiprocessing's: the job's command is the user's, given after --
vrc, vout, verr = run([DEVTRACE, "fix", "--verify", ranks[0], "--", PYTHON, "two_bugs.py"] if ranks else ["false"],
                      cwd=d)
check("fix --verify of a rank's trace with the job's command after --; a rank failing on another mismatch is said",
      rc == 1 and vrc == 1 and "verifying: the patched two_bugs.py" in verr
      and "a device mismatch still fires in a process the program started" in vout, "%d %r %r" % (vrc, vout, verr))

# ---------------------------------------------------------------- the examples, as every example is checked

here = os.path.dirname(os.path.abspath(__file__))
erc, eout, eerr = run([PYTHON, os.path.join(here, "pytorch_examples.py"), DEVTRACE, PYTHON, EXAMPLES,
                       os.path.join(WORK, "examples"), "_ddp_"])
names = sorted(n for n in os.listdir(EXAMPLES) if "_ddp_" in n and n.startswith(("bug_", "ok_")))
check("the DDP examples pass pytorch_examples.py's checks (%d examples, %d bugs)"
      % (len(names), sum(n.startswith("bug_") for n in names)),
      erc == 0 and sum(n.startswith("bug_") for n in names) >= 4 and " 0 failed" in eout,
      eout[-4000:] + eerr[-2000:])
for line in eout.splitlines():
    if line.startswith(("ok  ", "FAIL")):
        print("    " + line)

failed = results.count(False)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed or not results else 0)
