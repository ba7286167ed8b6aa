# Run by tests/adapters/pytorch_examples.py under `devtrace run` with DEVTRACE_SIM_CUDA=2:
# what a script sees of simulated GPUs, and what no mode sees but the adapter
# records anyway. Prints one line per check, "ok" or what went wrong, and exits 1 on a failure.
import os
import sys
import tempfile

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

failed = 0


def check(name, cond):
    global failed
    print(("ok   " if cond else "FAIL ") + name)
    failed += not cond


check("cuda available, 2 devices", torch.cuda.is_available() and torch.cuda.device_count() == 2)
x = torch.ones(3, device="cuda")
check("a factory's device=", x.is_cuda and str(x.device) == "cuda:0" and x.get_device() == 0)
check("repr names the device", "device='cuda:0'" in repr(x))
check("type() names cuda", x.type() == "torch.cuda.FloatTensor")
y = x.to("cuda:1")
check(".to another GPU is a copy", y is not x and str(y.device) == "cuda:1" and str(x.device) == "cuda:0")
check(".to the same device is the tensor itself", x.to("cuda:0") is x)
try:
    x.numpy()
    check(".numpy() of a GPU tensor raises", False)
except TypeError as e:
    check(".numpy() of a GPU tensor raises", "cuda:0 device type tensor to numpy" in str(e))
try:
    x + y
    check("cuda:0 + cuda:1 raises PyTorch's error", False)
except RuntimeError as e:
    check("cuda:0 + cuda:1 raises PyTorch's error",
          str(e) == "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!")
check("a 0-dim cpu tensor joins a GPU op", str((x * torch.tensor(2.0)).device) == "cuda:0")
check("cpu indices index a GPU tensor", str(x[torch.tensor([0, 2])].device) == "cuda:0")
w = torch.nn.Parameter(torch.randn(3, device="cuda:1"))
(w * 2).sum().backward()
check("a gradient on its parameter's device", str(w.grad.device) == "cuda:1")
with torch.cuda.device(1):
    check("torch.cuda.device(1) sets the current device", torch.cuda.current_device() == 1
          and str(torch.zeros(1, device="cuda").device) == "cuda:1")
path = os.path.join(tempfile.mkdtemp(), "t.pt")
torch.save({"w": torch.arange(4.0)}, path)
ck = torch.load(path, map_location="cuda:1")
check("torch.load(map_location=cuda:1)", str(ck["w"].device) == "cuda:1")
legacy = torch.Tensor([1.0, 2.0])
arr = torch.from_numpy(np.ones(2))
check("legacy constructor and from_numpy work", legacy.shape == (2,) and arr.shape == (2,))


class Counting(TorchFunctionMode):
    calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        Counting.calls += 1
        return func(*args, **(kwargs or {}))


with Counting():
    z = x + 1
check("the program's own mode runs inside the recorder", Counting.calls >= 1 and str(z.device) == "cuda:0")
after = x * 3
check("recording goes on after the program's mode ends", str(after.device) == "cuda:0")
m = torch.nn.Linear(3, 2).cuda(1)
check("Module.cuda(1) moves parameters in place", str(m.weight.device) == "cuda:1" and m.weight.is_cuda)
check("torch.cuda.synchronize and memory_allocated answer",
      torch.cuda.synchronize() is None and torch.cuda.memory_allocated() >= 0)
sys.exit(1 if failed else 0)
