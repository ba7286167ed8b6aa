"""Checks of DistributedDataParallel on simulated GPUs (run by ctest as pytorch-ddp): ranks started by
torch.multiprocessing.spawn each see the GPUs and their own, init_process_group("nccl") runs over gloo,
DDP all-reduces the gradients on the parameters' devices, each rank writes a trace named by its rank,
the ranks' traces of one job read as one merged report, `devtrace fix --verify` of a rank's trace runs
the job again (and says when a rank still fails), and the examples/pytorch/*_ddp_*.py examples pass
every check tests/adapters/pytorch_examples.py makes of an example.

usage: ddp_checks.py DEVTRACE PYTHON EXAMPLES_DIR WORK_DIR [--verified-on-torch2]
(--verified-on-torch2: PYTHON is a torch 1.x, and the examples' patches are run by the torch 2 twin, as
pytorch_examples.py says; this script's own checks of fix --verify on a job are made on both)
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

VERIFIED_ON_2 = sys.argv[5:] == ["--verified-on-torch2"]
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
# multiprocessing's helpers (the resource tracker that spawn starts with the first rank) run no code of the
# program's: a trace of theirs, if any, is headed by no rank (on 2.x the tracker once inherited rank 0's)
others = sorted(f for f in os.listdir(d) if f.endswith(".db") and ".rank" not in f and f != "job.db")
check("no other process's trace is headed by a rank (the resource tracker's is not rank 0's)",
      all(meta(os.path.join(d, f), "rank") is None for f in others)
      and all("multiprocessing" in (meta(os.path.join(d, f), "argv") or "") for f in others), repr(others))
rrc, rep, rerr = run([DEVTRACE, "report"] + ranks)
check("a clean job's ranks: no device mismatch", rrc == 0 and rep.count("no device mismatch") == 2, rep + rerr)

# ---------------------------------------------------------------- one merged report

rc, so, se, d = traced("metric", SPAWN % '''    acc = torch.tensor([0.5])  # a metric made on the cpu
    dist.all_reduce(acc)
    dist.destroy_process_group()''')
# torch 1.x: NCCL's own check; 2.x: an NCCL group has no backend for the cpu (sim_texts RULES "nccl_cuda_only")
MAJOR = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__.split('.')[0])"], capture_output=True,
                       text=True).stdout.strip()
NO_CPU = "RuntimeError: No backend type associated with device type cpu"
want = NO_CPU if MAJOR == "2" else "RuntimeError: Tensors must be CUDA and dense"
check("a cpu tensor all_reduce'd over NCCL fails as torch %s's NCCL group does (%s)" % (MAJOR, want),
      rc == 1 and want in se and se.count("Error: ") == se.count(want), se[-3000:])
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
check("2.11's rules: a collective of cpu tensors finds no backend in an NCCL group, recorded as a mismatch",
      rc2 == 1 and NO_CPU in se2 and "error: device mismatch in all_reduce" in rep2, se2[-2000:] + rep2)
# a GPU tensor among the arguments the op is dispatched on: NCCL's own check, a ValueError on 2.x; where the
# cpu holds no dispatched argument of all_gather (its output list is not one), the cpu has no backend
GATHER = '''    try:
        dist.all_gather_into_tensor(torch.zeros(4, device=device), torch.ones(2))  # a cpu input, a GPU output
    except (RuntimeError, ValueError) as e:
        os.write(1, ("gather_into %d %s: %s\\n" % (rank, type(e).__name__, e)).encode())
    try:
        dist.all_gather([torch.zeros(2, device=device), torch.zeros(2, device=device)], torch.ones(2))
    except (RuntimeError, ValueError) as e:
        os.write(1, ("gather %d %s: %s\\n" % (rank, type(e).__name__, e)).encode())
    dist.barrier()
    print("rank", rank, "done")
    dist.destroy_process_group()'''
for version, want_into, want_list in (
        ("2.11", "ValueError: Tensors must be CUDA and dense", "RuntimeError: No backend type associated with device "
                                                               "type cpu"),
        ("2.0", "ValueError: Tensors must be CUDA and dense", "ValueError: Tensors must be CUDA and dense"),
        ("1.13", "RuntimeError: Tensors must be CUDA and dense", "RuntimeError: Tensors must be CUDA and dense")):
    rc3, so3, se3, d3 = traced("gather" + version.replace(".", ""), SPAWN % GATHER,
                               {"DEVTRACE_SIM_TORCH_VERSION": version})
    lines = sorted(l for l in so3.splitlines() if l.startswith("gather"))
    check("%s's rules: all_gather_into_tensor of a cpu input into a GPU output says %r, all_gather of a cpu input "
          "into GPU outputs %r" % (version, want_into, want_list),
          rc3 == 0 and lines == sorted(["gather_into %d %s" % (r, want_into) for r in range(2)]
                                       + ["gather %d %s" % (r, want_list) for r in range(2)]),
          "%d\n%s\n%s" % (rc3, so3, se3[-2000:]))
if MAJOR == "2":
    # the text is this torch's own: a collective of cpu tensors in a group whose backend is registered for
    # cuda only, through torch's real dispatcher (on 1.x a backend serves every device: no such text there)
    real = subprocess.run([PYTHON, "-c", '''import os, torch, torch.distributed as dist
dist.Backend.register_backend("cudaonly", lambda store, rank, size, timeout: dist.ProcessGroupGloo(store, rank, size, timeout),
                              devices=["cuda"])
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
dist.init_process_group("cudaonly", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
try:
    dist.all_reduce(torch.ones(1))
except RuntimeError as e:
    print("RuntimeError: " + str(e))
'''], capture_output=True, text=True, timeout=120)
    check("2.x's text for a cpu collective without a cpu backend is torch's own (%r)" % NO_CPU,
          real.stdout.strip() == NO_CPU, real.stdout + real.stderr[-2000:])

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
                       os.path.join(WORK, "examples"), "_ddp_"] + (["--verified-on-torch2"] if VERIFIED_ON_2 else []))
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
