# Runs the differential test's cases (tests/adapters/test_sim_diff.py) in one process: under `devtrace run` with
# simulated GPUs, or plainly for the cases on the cpu and the meta device only. Reads the cases (JSON: a list
# of {"tensors": {name: spec}, "expr": a Python expression, "target": the variable an in-place form changes})
# from argv[1] and writes one result per case to argv[2]: {"raised": the exception's type ("" when it ran),
# "text": its message's first line, "device": the result's device}.
import json
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore")
DTYPES = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}


def make(spec):
    """A tensor as spec says: its shape, dtype, values (indices below "high"), view and device."""
    shape = list(spec["shape"])
    view = spec.get("view")
    if view == "t" and len(shape) == 2:
        shape = shape[::-1]
    elif view == "slice" and shape:
        shape[0] += 1
    elif view == "expand" and shape:
        shape[0] = 1
    dtype = DTYPES[spec.get("dtype", "float32")]
    if dtype == torch.bool:
        t = torch.rand(shape) > 0.5
    elif dtype == torch.int64:
        t = torch.randint(0, spec.get("high", 2), shape)
    else:
        t = torch.randn(shape)
    if spec.get("module") == "lstm":
        t = nn.LSTM(shape[0], shape[1])
    t = t.to(spec["dev"])
    if view == "t" and len(spec["shape"]) == 2:
        t = t.t()
    elif view == "slice" and spec["shape"]:
        t = t[1:]
    elif view == "expand" and spec["shape"]:
        t = t.expand(*spec["shape"])
    return t


def run(case):
    env = {"torch": torch, "F": F, "nn": nn}
    try:
        for name, spec in case["tensors"].items():
            env[name] = make(spec)
    except Exception as e:  # the setup itself: no case
        return {"raised": "setup " + type(e).__name__, "text": str(e).split("\n")[0], "device": None}
    try:
        out = eval(case["expr"], env)
    except Exception as e:
        return {"raised": type(e).__name__, "text": str(e).split("\n")[0], "device": None}
    if case.get("target"):
        out = env[case["target"]]
    while isinstance(out, (tuple, list)) and out:
        out = out[0]
    return {"raised": "", "text": "", "device": str(out.device) if isinstance(out, torch.Tensor) else None}


with open(sys.argv[1]) as f:
    cases = json.load(f)
results = [run(c) for c in cases]
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
