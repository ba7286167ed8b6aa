# Run by torch2_checks.py under `devtrace run` on simulated GPUs: every op of a table of PyTorch's
# device errors (tests/adapters/data/torch2.11-device-errors.txt, given as argv[1]) run with the table's
# setup; prints one JSON object, row name -> the text it raised ("" when it ran, "unavailable: ..."
# when this torch cannot run the call at all).
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

d = torch.device("cuda")
x = torch.randn(4, 4, device=d); c = torch.randn(4, 4); ic = torch.tensor([0, 2]); mc = torch.rand(4, 4) > 0.5
img = torch.randn(1, 3, 8, 8, device=d); imgc = img.cpu(); Wc = torch.randn(2, 3, 3, 3, device=d)
logits = torch.randn(4, 3, device=d); tgt = torch.tensor([0, 1, 2, 0]); emb = torch.randn(10, 4, device=d)
q = torch.randn(1, 2, 4, 8, device=d); amask = torch.ones(4, 4, dtype=torch.bool)
lstm = nn.LSTM(4, 4).to(d); seq = torch.randn(3, 2, 4, device=d); h0 = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
mha = nn.MultiheadAttention(8, 2).to(d); s8 = torch.randn(4, 1, 8, device=d)
bn = nn.BatchNorm1d(4).to(d); bn.running_mean = torch.zeros(4)

out = {}
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        name, call = line.rstrip("\n").split("|")[:2]
        try:
            eval(call)
            out[name] = ""
        except RuntimeError as e:
            out[name] = str(e).split("\n")[0]
        except (AttributeError, TypeError) as e:
            out[name] = "unavailable: %s" % e
print(json.dumps(out))
