"""The simulated GPUs' cases of issue 42, each a test of its own (ctest sim-cases): a cpu buffer set from a
simulated GPU's tensor (a cross-device copy) runs; a program mixing the meta device and the cpu fails under
DEVTRACE_SIM_CUDA exactly as without devtrace; a TorchScript function's bug fails inside it and the report
blames its line; torch.compile (2.x) runs its function eagerly, so the op a GPU fails on fails; autocast("cuda")
and GradScaler run as on a GPU. Each case is a small script run under `devtrace run` with 2 simulated GPUs.

usage: sim_cases_checks.py DEVTRACE PYTHON WORK_DIR
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import json
import os
import subprocess
import sys

DEVTRACE, PYTHON, WORK = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)), flush=True)


def script(name, code):
    path = os.path.join(WORK, name + ".py")
    with open(path, "w") as f:
        f.write(code)
    return path


def env_of(sim):
    e = dict(os.environ)
    for k in ("DEVTRACE_SIM_CUDA", "DEVTRACE_SIM_TORCH_VERSION"):
        e.pop(k, None)
    e["DEVTRACE_QUIET"] = "1"
    if sim:
        e["DEVTRACE_SIM_CUDA"] = "2"
    return e


def traced(name, code):
    """Runs script NAME traced on 2 simulated GPUs; (status, stdout, stderr, the trace's path)."""
    path, db = script(name, code), os.path.join(WORK, name + ".db")
    p = subprocess.run([DEVTRACE, "run", "-o", db, "--overwrite", "--", PYTHON, path], env=env_of(True), cwd=WORK,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr, db


def untraced(name, code):
    p = subprocess.run([PYTHON, script(name, code)], env=env_of(False), cwd=WORK, capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def mismatches(db):
    p = subprocess.run([DEVTRACE, "report", "--json", db], capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)["traces"][0]["mismatches"]
    except Exception as e:
        return [{"error": "%s: %s" % (e, p.stdout[:500] + p.stderr[:500])}]


def last_line(text):
    lines = [ln for ln in text.strip().split("\n") if ln.strip()]
    return lines[-1] if lines else ""


version = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True).stdout.strip()
major = int(version.split(".")[0]) if version[:1].isdigit() else 0
print("torch %s (%s)" % (version, PYTHON))

# ---------------------------------------------------------------- a cpu buffer set from a GPU's tensor

rc, so, se, db = traced("setitem_copy", "import torch\n"
                        "buf = torch.zeros(4, 3)\n"
                        "z = torch.randn(5, 3, device='cuda')\n"
                        "for k in range(4):\n"
                        "    buf[k] = z[k + 1]\n"
                        "buf[1:3] = z[:2]\n"
                        "buf[torch.tensor(0)] = z[0]\n"
                        "print(buf.device, bool((buf[3] == z[4].cpu()).all()))\n")
check("buf[k] = z[...]: a cpu buffer set from a simulated GPU's tensor is a copy and runs",
      rc == 0 and so == "cpu True\n" and mismatches(db) == [], (rc, so, se[-500:]))

rc, so, se, db = traced("setitem_advanced", "import torch\n"
                        "buf = torch.zeros(4, 3)\n"
                        "z = torch.randn(5, 3, device='cuda')\n"
                        "idx = torch.tensor([0, 2])\n"
                        "buf[idx] = z[:2]\n")
mm = mismatches(db)
check("buf[idx] = z[:2] with a tensor index is index_put_ and raises, as on a GPU",
      rc == 1 and "found at least two devices, cuda:0 and cpu!" in se and len(mm) == 1
      and mm[0].get("site", {}).get("line") == 5, (rc, se[-500:], mm))

# ---------------------------------------------------------------- meta and cpu in one op

for n, code in enumerate([
        "import torch\nm = torch.randn(3, 2).to('meta')\nc = torch.randn(3, 2)\nprint(m.device)\ny = m + c\n"
        "print('ran', y.device)\n",
        "import torch\nlin = torch.nn.Linear(2, 2).to('meta')\nx = torch.randn(3, 2)\nprint(lin.weight.device)\n"
        "print(lin(x).device)\n",
        "import torch\nm = torch.empty(3, 2, device='meta')\nc = torch.randn(3, 2)\n"
        "print(torch.cat([m, c]).device)\n"]):
    urc, uso, use = untraced("meta_%d" % n, code)
    rc, so, se, db = traced("meta_%d" % n, code)
    check("meta and cpu (%s): the same exit status, output and error as without devtrace (%d)" % (
          code.split("\n")[-2].strip(), urc),
          rc == urc and so == uso and last_line(se) == last_line(use),
          ((urc, uso, last_line(use)), (rc, so, se[-600:])))

# ---------------------------------------------------------------- TorchScript

JIT = '''import torch


@torch.jit.script
def scale(x, m: int):
    r = torch.arange(m)
    return x * r


x = torch.randn(4, device="cuda")
y = scale(x, 4)
print(y.sum())
'''
rc, so, se, db = traced("jit_script", JIT)
mm = mismatches(db)
odd = [o for o in mm[0].get("operands", []) if o.get("odd")] if len(mm) == 1 else []
check("@torch.jit.script: the function runs eagerly, fails inside it at its multiply, and the report blames the "
      "arange line", rc == 1 and 'jit_script.py", line 7, in scale' in se and len(mm) == 1
      and mm[0]["site"]["line"] == 7 and odd and odd[0]["chain"][0]["site"]["line"] == 6
      and mm[0].get("fix", {}).get("site", {}).get("line") == 6, (rc, se[-600:], mm))

rc, so, se, db = traced("jit_script_ok", JIT.replace("torch.arange(m)", "torch.arange(m, device=x.device)"))
check("@torch.jit.script, its fixed twin: runs", rc == 0 and mismatches(db) == [], (rc, se[-400:]))

# ---------------------------------------------------------------- torch.compile

if not major >= 2:
    print("skip torch.compile: torch %s has none (the TorchScript case above is this version's sibling)" % version)
else:
    COMPILE = '''import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()


@torch.compile
def positions(x):
    pos = torch.arange(x.shape[-1])
    return x + pos


model = torch.compile(Net().cuda())
x = torch.randn(2, 4, device="cuda")
print(model(x).device)
print(positions(x).device)
'''
    rc, so, se, db = traced("compile", COMPILE)
    mm = mismatches(db)
    check("torch.compile: a compiled model runs on the simulated GPU, and a compiled function fails at the op a GPU "
          "fails on", rc == 1 and so == "cuda:0\n" and 'compile.py", line 16, in positions' in se and len(mm) == 1
          and mm[0]["site"]["line"] == 16 and mm[0].get("fix", {}).get("site", {}).get("line") == 15,
          (rc, so, se[-600:], mm))

# ---------------------------------------------------------------- autocast and GradScaler

AMP = '''import torch
import torch.nn as nn

model = nn.Linear(4, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
x = torch.randn(8, 4, device="cuda")
for step in range(3):
    opt.zero_grad()
    with torch.autocast("cuda"):
        y = model(x)
        loss = y.float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print(y.dtype, y.device, scaler.get_scale() > 0, model.weight.grad.device)
'''
rc, so, se, db = traced("amp", AMP)
want = "torch.float16" if major >= 2 else "torch.float32"  # 1.13's CPU autocast has no float16 (docs/torch2.md)
check("autocast('cuda') and GradScaler: a training loop runs, its matmul in %s" % want,
      rc == 0 and so == "%s cuda:0 True cuda:0\n" % want and "warn" not in se.lower(), (rc, so, se[-600:]))

# ---------------------------------------------------------------- a checkpoint of a GPU's tensors

# torch.save and torch.load of tensors on a simulated GPU print nothing a GPU's run does not: every warning is an
# error here (torch 2's Tensor.storage() warns that TypedStorage is deprecated; the simulator's save does not call it)
CKPT = '''import warnings
warnings.simplefilter("error")
import torch

model = torch.nn.Linear(3, 2).cuda()
torch.save({"model": model.state_dict(), "x": torch.ones(2, device="cuda")}, "ckpt.pt")
back = torch.load("ckpt.pt")
again = torch.load("ckpt.pt", map_location="cpu")
model.load_state_dict(back["model"])
print(back["x"].device, back["model"]["weight"].device, again["x"].device)
'''
rc, so, se, db = traced("checkpoint", CKPT)
check("torch.save and torch.load of a simulated GPU's tensors, warnings as errors: they run, print nothing more, and "
      "load back onto the GPU saved", rc == 0 and so == "cuda:0 cuda:0 cpu\n" and se.strip() == "" and
      mismatches(db) == [], (rc, so, se[-800:]))

failed = results.count(False)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed or not results else 0)
