# rule: checkpoint-map-location
# code: stats = stats.to(device)
# Feature statistics saved by a preprocessing run and reloaded with map_location="cpu" (to load anywhere):
# they stay on the CPU while the batches are normalized on the GPU.
import os
import tempfile

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
path = os.path.join(tempfile.mkdtemp(), "feature_stats.pt")
features = torch.randn(500, 6) * 3 + 1
torch.save(torch.stack([features.mean(0), features.std(0)]), path)

stats = torch.load(path, map_location="cpu")  # devtrace: fix
model = torch.nn.Linear(6, 1).to(device)
for step in range(3):
    x = torch.randn(8, 6).to(device)
    z = (x - stats[0]) / stats[1]
    print("step", step, round(model(z).mean().item(), 4))
