# A long PyTorch loop for the flight recorder's test (tests/tracer/check_flight.c):
# STEPS cheap steps on the (simulated) GPU, each a batch made on the cpu,
# moved and used, then at the last step a tensor made at the start and never
# moved meets the GPU. Usage: flight_loop.py STEPS
import sys

import torch

steps = int(sys.argv[1])
device = torch.device("cuda")
weight = torch.randn(4, 4).to(device)
scale = torch.ones(4, 4)  # devtrace: origin
for i in range(steps):
    x = torch.randn(2, 4)
    xg = x.to(device)  # devtrace: move
    y = xg @ weight
    del x, xg, y
print("steps", steps, flush=True)
x = torch.randn(2, 4).to(device)
out = x @ scale  # devtrace: mismatch
