"""The PyTorch adapter's benchmark workloads: a small MLP (tiny ops, the
worst case for a per-op recorder) and a small CNN, trained on the CPU, or on
the GPU when one is there (real or simulated). Prints the training loop's
own wall time in seconds: the harness (bench/pytorch.sh) compares runs of it
traced and untraced in one invocation.

usage: pytorch_train.py mlp|cnn STEPS
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

kind, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
torch.set_num_threads(1)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if kind == "mlp":
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    batches = [(torch.randn(64, 64), torch.randint(0, 10, (64,))) for _ in range(8)]
else:
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    batches = [(torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))) for _ in range(4)]
model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start = time.perf_counter()
for step in range(steps):
    x, y = batches[step % len(batches)]
    x, y = x.to(device), y.to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
loss = loss.item()
print("%.6f" % (time.perf_counter() - start))
